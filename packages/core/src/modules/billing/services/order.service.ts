import { raw, UniqueConstraintViolationException, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { paging, type Page, type PageQuery } from '../../../kernel/http/dto/paging.js';
import { hooksServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { paymentProviderServiceIdentifier, type PaymentEvent, type PaymentProvider, type WebhookDelivery } from '../../../ports/payment-provider.js';
import { Team } from '../../identity/index.js';
import type { BillingConfig } from '../billing.config.js';
import { PaymentEventRecord } from '../entities/payment-event.entity.js';
import { PaymentOrder, type OrderKind, type OrderStatus } from '../entities/payment-order.entity.js';
import { billingErrors } from '../errors.js';
import { ManualPaymentProvider } from '../providers/manual-payment-provider.js';
import type { BillingPeriod } from '../periods.js';
import { isUuid, lockTeam } from '../rows.js';
import { billingConfigServiceIdentifier } from '../tokens.js';
import { CouponService } from './coupon.service.js';
import { CreditLedger, teamIdOf } from './credit-ledger.js';
import type { CreditPack, Plan } from './plan-catalog.js';
import { PlanCatalog } from './plan-catalog.js';
import { SubscriptionLifecycle, type PlanChange } from './subscription-lifecycle.js';
import { inTransaction } from '../../../kernel/transaction.js';
import type { PaymentGuidance, WebhookResult } from '../schemas.js';

export type { PaymentGuidance, WebhookResult };

export interface PlacedOrder {
  order: PaymentOrder;
  /** Null when nothing was left to pay (a 100% coupon): the order is already paid and applied. */
  payment: PaymentGuidance | null;
}

/** Who marked an order paid: an administrator over HTTP, an operator with the CLI, the provider, or nobody (nothing to pay). */
export type PaidVia = { kind: 'admin'; userId: string } | { kind: 'cli'; operator: string } | { kind: 'provider'; eventId: string } | { kind: 'free' };

export interface PaidOrder {
  order: PaymentOrder;
  /** The order was already paid: nothing was applied again. */
  alreadyPaid: boolean;
}

interface OrderDraft {
  teamId: string;
  userId: string | null;
  kind: OrderKind;
  description: string;
  originalAmount: number;
  planCode?: string;
  billingPeriod?: BillingPeriod;
  packCode?: string;
  credits?: number;
}

interface PaidEffects extends PaidOrder {
  change: PlanChange | null;
}

class DuplicateEvent extends Error {}

const MINUTE_MS = 60_000;

/**
 * Payment orders from placement to payment: coupons are redeemed when an order is placed, the
 * PaymentProvider makes the checkout, and paying an order applies it exactly once (a plan starts,
 * a renewal is settled, credits are added) in the transaction that marks it paid.
 */
@injectable()
export class OrderService {
  constructor(
    @inject(PlanCatalog) private readonly plans: PlanCatalog,
    @inject(CouponService) private readonly coupons: CouponService,
    @inject(CreditLedger) private readonly ledger: CreditLedger,
    @inject(SubscriptionLifecycle) private readonly lifecycle: SubscriptionLifecycle,
    @inject(paymentProviderServiceIdentifier) private readonly provider: PaymentProvider,
    @inject(billingConfigServiceIdentifier) private readonly config: BillingConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /**
   * An order for a plan period (an upgrade). The plan starts when it is paid. The team's earlier
   * pending plan orders are cancelled (their coupons given back): the newest choice is the one to
   * pay, and two payable upgrades would invite paying twice.
   */
  async placePlanOrder(
    em: EntityManager,
    input: { teamId: string; userId: string; customerEmail?: string; plan: Plan; billingPeriod: BillingPeriod; couponCode?: string },
  ): Promise<PlacedOrder> {
    const { plan, billingPeriod } = input;
    const superseded = await em.find(PaymentOrder, { team: input.teamId, kind: 'plan', status: 'pending' }, { fields: ['id'] });
    for (const order of superseded) await this.cancel(em, order.id);
    return this.place(
      em,
      {
        teamId: input.teamId,
        userId: input.userId,
        kind: 'plan',
        description: `${plan.name} plan (${billingPeriod})`,
        originalAmount: this.plans.priceOf(plan, billingPeriod),
        planCode: plan.code,
        billingPeriod,
      },
      input.couponCode,
      input.customerEmail,
    );
  }

  /** An order for a credit pack. The credits are added when it is paid. */
  placeCreditsOrder(em: EntityManager, input: { teamId: string; userId: string; customerEmail?: string; pack: CreditPack; couponCode?: string }): Promise<PlacedOrder> {
    const { pack } = input;
    return this.place(
      em,
      { teamId: input.teamId, userId: input.userId, kind: 'credits', description: pack.name, originalAmount: pack.price, packCode: pack.code, credits: pack.credits },
      input.couponCode,
      input.customerEmail,
    );
  }

  private async place(em: EntityManager, draft: OrderDraft, couponCode: string | undefined, customerEmail: string | undefined): Promise<PlacedOrder> {
    const now = this.clock.now();
    const order = await inTransaction(em, async (tx) => {
      // The team may have been deleted since the membership check: 400 NO_TEAM, not a foreign-key failure.
      await lockTeam(tx, draft.teamId);
      const quote = couponCode ? await this.coupons.redeem(tx, couponCode, draft.originalAmount) : null;
      const discount = quote?.discount ?? 0;
      return tx.create(PaymentOrder, {
        id: this.ids.next(),
        team: tx.getReference(Team, draft.teamId),
        kind: draft.kind,
        status: 'pending',
        planCode: draft.planCode ?? null,
        billingPeriod: draft.billingPeriod ?? null,
        periodStart: null,
        packCode: draft.packCode ?? null,
        credits: draft.credits ?? null,
        description: draft.description.slice(0, 200),
        originalAmount: draft.originalAmount,
        discountAmount: discount,
        amount: draft.originalAmount - discount,
        currency: this.plans.currency,
        coupon: quote?.coupon ?? null,
        couponCode: quote?.coupon.code ?? null,
        couponCounted: quote !== null,
        provider: this.provider.id,
        providerReference: null,
        paymentUrl: null,
        instructions: null,
        userId: draft.userId,
        uniqueKey: null,
        checkoutAttempts: 0,
        expiresAt: new Date(now.getTime() + this.config.orderTtlMinutes * MINUTE_MS),
        paidAt: null,
        paidVia: null,
        closedAt: null,
        version: 1,
        createdAt: now,
        updatedAt: now,
      } as PaymentOrder);
    });
    if (order.amount === 0) {
      const paid = await this.markPaid(em, order.id, { kind: 'free' });
      return { order: paid.order, payment: null };
    }
    try {
      const payment = await this.checkout(em, order.id, customerEmail);
      return { order: await this.reload(em, order.id), payment };
    } catch (error) {
      await this.cancel(em, order.id);
      throw error;
    }
  }

  /**
   * A (new) way to pay a pending order through the current provider. Checkouts expire sooner than
   * some orders (a Stripe session lives at most 24 hours, a renewal order for the grace period),
   * so a team may ask again. 502 PAYMENT_PROVIDER_ERROR when the provider fails.
   */
  async checkout(em: EntityManager, orderId: string, customerEmail?: string): Promise<PaymentGuidance> {
    const bumped = await em.nativeUpdate(
      PaymentOrder,
      { id: orderId, status: 'pending' },
      { checkoutAttempts: raw('checkout_attempts + 1'), provider: this.provider.id, updatedAt: this.clock.now() },
    );
    const order = await this.reload(em, orderId);
    if (!bumped) throw billingErrors.orderNotPending(order.status);
    let checkout;
    try {
      checkout = await this.provider.createCheckout({
        orderId: order.id,
        teamId: teamIdOf(order),
        description: order.description,
        amount: order.amount,
        currency: order.currency,
        expiresAt: order.expiresAt,
        customerEmail,
        idempotencyKey: `${order.id}:${order.checkoutAttempts}`,
      });
    } catch (error) {
      this.log.error({ err: error, orderId, provider: this.provider.id }, 'billing: the payment provider failed to create a checkout');
      throw billingErrors.paymentProviderError(error);
    }
    await em.nativeUpdate(
      PaymentOrder,
      { id: orderId, status: 'pending' },
      { providerReference: checkout.reference, paymentUrl: checkout.url, instructions: checkout.instructions, updatedAt: this.clock.now() },
    );
    return {
      provider: this.provider.id,
      reference: checkout.reference,
      url: checkout.url,
      instructions: checkout.instructions,
      expiresAt: (checkout.expiresAt ?? order.expiresAt).toISOString(),
    };
  }

  /**
   * Marks an order paid and applies it, once: a second call answers `alreadyPaid`. An
   * administrator (or the CLI) may confirm a pending or expired order; a provider event may also
   * pay an expired or cancelled order, since the money moved. 404 ORDER_NOT_FOUND, 409
   * ORDER_NOT_PENDING. Callers check that the order's provider takes manual confirmation.
   */
  async markPaid(em: EntityManager, orderId: string, via: PaidVia): Promise<PaidOrder> {
    const allowed: OrderStatus[] = via.kind === 'provider' ? ['pending', 'expired', 'canceled'] : via.kind === 'free' ? ['pending'] : ['pending', 'expired'];
    const effects = await inTransaction(em, (tx) => this.payIn(tx, orderId, allowed, via));
    await this.announce(effects);
    return { order: await this.reload(em, orderId), alreadyPaid: effects.alreadyPaid };
  }

  /**
   * An administrator's (or operator's) confirmation that a manual-payment order was paid.
   * 404 `order_not_found`; 409 `order_not_manual` for orders of a provider that reports payments
   * itself; 409 `order_not_payable` for a cancelled order. Confirming a paid order is a no-op.
   */
  async confirmManually(em: EntityManager, orderId: string, via: Extract<PaidVia, { kind: 'admin' | 'cli' }>): Promise<PaidOrder> {
    const order = await this.get(em, orderId);
    if (order.provider !== ManualPaymentProvider.identifier) {
      throw new TrellisError('conflict', 'order_not_manual', `This order is paid through ${order.provider}; it is marked paid when the provider reports the payment.`);
    }
    try {
      return await this.markPaid(em, order.id, via);
    } catch (error) {
      if (error instanceof TrellisError && error.code === 'ORDER_NOT_PENDING') throw new TrellisError('conflict', 'order_not_payable', error.message);
      throw error;
    }
  }

  private async payIn(tx: EntityManager, orderId: string, allowed: readonly OrderStatus[], via: PaidVia): Promise<PaidEffects> {
    const now = this.clock.now();
    const before = isUuid(orderId) ? await tx.findOne(PaymentOrder, { id: orderId }, { refresh: true }) : null;
    if (!before) throw billingErrors.orderNotFound();
    if (before.status === 'paid') return { order: before, alreadyPaid: true, change: null };
    if (!allowed.includes(before.status)) throw billingErrors.orderNotPending(before.status);
    const paidVia =
      via.kind === 'admin' ? `admin:${via.userId}` : via.kind === 'cli' ? `cli:${via.operator}`.slice(0, 300) : via.kind === 'provider' ? `provider:${via.eventId}`.slice(0, 300) : 'free';
    const changed = await tx.nativeUpdate(
      PaymentOrder,
      { id: orderId, status: before.status },
      { status: 'paid', paidAt: now, paidVia, closedAt: now, updatedAt: now, version: raw('version + 1') },
    );
    const order = await tx.findOneOrFail(PaymentOrder, { id: orderId }, { refresh: true });
    if (!changed) {
      // Someone else changed it between our read and our update (we waited for their lock).
      if (order.status === 'paid') return { order, alreadyPaid: true, change: null };
      throw billingErrors.orderNotPending(order.status);
    }
    if (order.coupon && !order.couponCounted) {
      await this.coupons.countLate(tx, order.coupon.id);
      order.couponCounted = true;
    }
    const teamId = teamIdOf(order);
    let change: PlanChange | null = null;
    if (order.kind === 'credits') {
      const balance = await this.ledger.lock(tx, teamId);
      this.ledger.record(
        tx,
        balance,
        { kind: 'purchase', grantDelta: 0, purchaseDelta: order.credits ?? 0, reason: `Bought ${order.description} (order ${order.id})`, orderId: order.id, uniqueKey: `purchase:${order.id}` },
        now,
      );
    } else {
      const sub = await this.lifecycle.lock(tx, teamId);
      const plan = order.planCode ? this.plans.find(order.planCode) : undefined;
      if (!sub || !plan || !order.billingPeriod) {
        this.log.error({ orderId, planCode: order.planCode }, 'billing: a paid order names a plan that is no longer configured; it was marked paid but not applied');
      } else if (
        order.kind === 'renewal' &&
        sub.status === 'past_due' &&
        sub.planCode === order.planCode &&
        sub.billingPeriod === order.billingPeriod &&
        sub.currentPeriodStart.getTime() === order.periodStart?.getTime()
      ) {
        // The renewal of the running period: it is simply paid now.
        sub.status = 'active';
        sub.updatedAt = now;
      } else {
        // An upgrade, or a renewal paid after the team had left that period: the plan starts now.
        const balance = await this.ledger.lock(tx, teamId);
        const from = this.lifecycle.startPlan(tx, sub, balance, plan, order.billingPeriod, now, {
          reason: `${plan.name} plan (${order.billingPeriod}) paid: monthly credits (order ${order.id})`,
          grantKey: `grant:order:${order.id}`,
        });
        await this.lifecycle.cancelPendingRenewals(tx, teamId, now);
        change = { teamId, from, to: { planCode: plan.code, billingPeriod: order.billingPeriod }, reason: order.kind === 'plan' ? 'upgrade' : 'renewal' };
      }
    }
    return { order, alreadyPaid: false, change };
  }

  private async announce(effects: PaidEffects): Promise<void> {
    if (effects.alreadyPaid) return;
    const { order } = effects;
    await this.hooks.emit('billing.order_paid', { orderId: order.id, teamId: teamIdOf(order), kind: order.kind, amount: order.amount, currency: order.currency });
    if (effects.change) await this.hooks.emit('billing.plan_changed', effects.change);
  }

  /** Cancels a pending order and gives its coupon redemption back. False when it was not pending. */
  async cancel(em: EntityManager, orderId: string): Promise<boolean> {
    return this.close(em, orderId, 'canceled', {});
  }

  /** Pending orders past their expiry, oldest first. */
  async dueForExpiry(em: EntityManager, limit: number): Promise<string[]> {
    const rows = await em.find(PaymentOrder, { status: 'pending', expiresAt: { $lte: this.clock.now() } }, { fields: ['id'], orderBy: { expiresAt: 'asc' }, limit });
    return rows.map((row) => row.id);
  }

  /** Expires a pending order whose time is up, giving its coupon redemption back. */
  async expire(em: EntityManager, orderId: string): Promise<boolean> {
    return this.close(em, orderId, 'expired', { expiresAt: { $lte: this.clock.now() } });
  }

  private async close(em: EntityManager, orderId: string, status: 'canceled' | 'expired', condition: FilterQuery<PaymentOrder>): Promise<boolean> {
    const now = this.clock.now();
    return inTransaction(em, async (tx) => {
      const changed = await tx.nativeUpdate(
        PaymentOrder,
        { id: orderId, status: 'pending', ...(condition as object) },
        { status, closedAt: now, updatedAt: now, version: raw('version + 1') },
      );
      if (!changed) return false;
      const order = await tx.findOneOrFail(PaymentOrder, { id: orderId }, { refresh: true });
      if (order.coupon && order.couponCounted) {
        await this.coupons.release(tx, order.coupon.id);
        order.couponCounted = false;
      }
      return true;
    });
  }

  async get(em: EntityManager, orderId: string): Promise<PaymentOrder> {
    const order = isUuid(orderId) ? await em.findOne(PaymentOrder, { id: orderId }) : null;
    if (!order) throw new TrellisError('not_found', 'order_not_found', 'No such order.');
    return order;
  }

  async list(em: EntityManager, query: PageQuery & { status?: OrderStatus; kind?: OrderKind; teamId?: string }): Promise<Page<PaymentOrder>> {
    const p = paging(query);
    const where: FilterQuery<PaymentOrder> = {};
    if (query.status) where.status = query.status;
    if (query.kind) where.kind = query.kind;
    if (query.teamId) where.team = query.teamId;
    const [items, total] = await em.findAndCount(PaymentOrder, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: p.size, offset: p.offset });
    return { items, total, page: p.page, size: p.size };
  }

  /**
   * Verifies a provider's webhook delivery and applies each of its events once. The event id is
   * claimed (unique per provider) in the same transaction that applies it: a failure leaves it
   * unclaimed for the provider's retry, and a repeated delivery counts as a duplicate.
   */
  async handleWebhook(em: EntityManager, providerId: string, delivery: WebhookDelivery): Promise<WebhookResult> {
    if (this.provider.id !== providerId || !this.provider.parseWebhook) {
      throw new TrellisError('not_found', 'UNKNOWN_PAYMENT_PROVIDER', `No webhook for the payment provider "${providerId}" on this server (in use: ${this.provider.id}).`);
    }
    const events = await this.provider.parseWebhook(delivery);
    const result: WebhookResult = { received: events.length, applied: 0, duplicates: 0 };
    for (const event of events) {
      const outcome = await this.applyEvent(em, event);
      if (outcome === 'duplicate') result.duplicates++;
      else if (outcome === 'applied') result.applied++;
    }
    return result;
  }

  private async applyEvent(em: EntityManager, event: PaymentEvent): Promise<string> {
    const now = this.clock.now();
    let effects: PaidEffects | null = null;
    let outcome: string;
    try {
      outcome = await inTransaction(em, async (tx) => {
        const record = tx.create(PaymentEventRecord, {
          id: this.ids.next(),
          provider: this.provider.id,
          eventId: event.id,
          type: event.type === 'ignored' ? event.eventType.slice(0, 64) : event.type,
          orderId: null,
          outcome: 'ignored',
          createdAt: now,
        } as PaymentEventRecord);
        try {
          // Claim the event id first: a concurrent delivery of the same event waits here, then fails.
          await tx.flush();
        } catch (error) {
          if (error instanceof UniqueConstraintViolationException) throw new DuplicateEvent();
          throw error;
        }
        if (event.type === 'ignored') return 'ignored';
        const order = isUuid(event.orderId) ? await tx.findOne(PaymentOrder, { id: event.orderId }, { refresh: true }) : null;
        if (!order || order.provider !== this.provider.id) {
          this.log.warn({ eventId: event.id, orderId: event.orderId }, 'billing: a payment event names no order of this provider');
          return (record.outcome = 'unknown_order');
        }
        record.orderId = order.id;
        if ((event.amount !== null && event.amount !== order.amount) || (event.currency !== null && event.currency.toLowerCase() !== order.currency)) {
          this.log.error(
            { eventId: event.id, orderId: order.id, paid: `${event.amount} ${event.currency}`, due: `${order.amount} ${order.currency}` },
            'billing: the amount paid differs from the order; the order was not marked paid',
          );
          return (record.outcome = 'amount_mismatch');
        }
        effects = await this.payIn(tx, order.id, ['pending', 'expired', 'canceled'], { kind: 'provider', eventId: event.id });
        return (record.outcome = effects.alreadyPaid ? 'already_paid' : 'applied');
      });
    } catch (error) {
      if (error instanceof DuplicateEvent) return 'duplicate';
      throw error;
    }
    if (effects) await this.announce(effects);
    return outcome;
  }

  private async reload(em: EntityManager, orderId: string): Promise<PaymentOrder> {
    return em.findOneOrFail(PaymentOrder, { id: orderId }, { refresh: true });
  }
}
