import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Hooks } from '../../../kernel/hooks.js';
import { hooksServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { paymentProviderServiceIdentifier, type PaymentProvider } from '../../../ports/payment-provider.js';
import { Team } from '../../identity/index.js';
import type { BillingConfig } from '../billing.config.js';
import { CreditBalance } from '../entities/credit-balance.entity.js';
import { PaymentOrder } from '../entities/payment-order.entity.js';
import { Subscription, type SubscriptionStatus } from '../entities/subscription.entity.js';
import type { PlanChangeReason } from '../hooks.js';
import { addMonths, monthsOf, periodContaining, type BillingPeriod } from '../periods.js';
import { billingErrors } from '../errors.js';
import { lockRow, lockTeam } from '../rows.js';
import { billingConfigServiceIdentifier } from '../tokens.js';
import { CreditLedger, teamIdOf } from './credit-ledger.js';
import { PlanCatalog, type Plan } from './plan-catalog.js';
import { inTransaction } from '../../../kernel/transaction.js';

const DAY_MS = 86_400_000;

export interface PlanChange {
  teamId: string;
  from: { planCode: string; billingPeriod: BillingPeriod };
  to: { planCode: string; billingPeriod: BillingPeriod };
  reason: PlanChangeReason;
}

export interface RenewalResult {
  teamId: string;
  change: PlanChange;
  /** The renewal order to pay, when the next period has a price. */
  orderId: string | null;
}

/**
 * How a subscription moves through time: a plan starts, periods renew, scheduled changes apply,
 * cancelled or unpaid subscriptions fall back to the fallback plan, and each credit month grants
 * the plan's credits. Every step takes the subscription's row lock with a condition that says the
 * step is still due, so running it twice, or in several processes at once, does it once.
 */
@injectable()
export class SubscriptionLifecycle {
  constructor(
    @inject(PlanCatalog) private readonly plans: PlanCatalog,
    @inject(CreditLedger) private readonly ledger: CreditLedger,
    @inject(billingConfigServiceIdentifier) private readonly config: BillingConfig,
    @inject(paymentProviderServiceIdentifier) private readonly provider: PaymentProvider,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /** The team's subscription with its write lock held until the transaction ends. */
  async lock(tx: EntityManager, teamId: string): Promise<Subscription | null> {
    await lockTeam(tx, teamId);
    return lockRow(tx, Subscription, { team: teamId });
  }

  /** Like `lock`, for a team that must have a subscription: 400 NO_TEAM when the team was deleted meanwhile. */
  async lockExisting(tx: EntityManager, teamId: string): Promise<Subscription> {
    const sub = await this.lock(tx, teamId);
    if (!sub) throw billingErrors.noTeam('The team no longer exists.');
    return sub;
  }

  /**
   * Puts a locked subscription on `plan` from `at` (a new anchor): the period starts now, any
   * cancellation or scheduled change is cleared, left-over grant credits expire and the plan's
   * first monthly credits are granted.
   */
  startPlan(
    tx: EntityManager,
    sub: Subscription,
    balance: CreditBalance,
    plan: Plan,
    period: BillingPeriod,
    at: Date,
    options: { status?: SubscriptionStatus; reason: string; grantKey: string },
  ): PlanChange['from'] {
    const from = { planCode: sub.planCode, billingPeriod: sub.billingPeriod };
    Object.assign(sub, {
      planCode: plan.code,
      billingPeriod: period,
      status: options.status ?? 'active',
      monthlyCredits: plan.monthlyCredits,
      anchorAt: at,
      currentPeriodStart: at,
      currentPeriodEnd: addMonths(at, monthsOf(period)),
      cancelAtPeriodEnd: false,
      canceledAt: null,
      scheduledPlanCode: null,
      scheduledBillingPeriod: null,
      updatedAt: this.clock.now(),
    });
    this.ledger.startPeriod(
      tx,
      balance,
      { start: at, end: addMonths(at, 1), credits: plan.monthlyCredits, reason: options.reason, uniqueKey: options.grantKey },
      this.clock.now(),
    );
    return from;
  }

  /** Subscriptions whose period has ended, oldest first. */
  async dueForRenewal(em: EntityManager, limit: number): Promise<string[]> {
    // A deleted team's subscription keeps its records but renews no more.
    const rows = await em.find(Subscription, { currentPeriodEnd: { $lte: this.clock.now() }, team: { deletedAt: null } }, { fields: ['id'], orderBy: { currentPeriodEnd: 'asc' }, limit });
    return rows.map((row) => row.id);
  }

  /**
   * Ends the current period of a subscription if it is still due: a cancelled or still unpaid
   * subscription falls back to the fallback plan; otherwise the scheduled plan (or the same plan)
   * starts its next period. Missed periods are skipped, not granted. The next period of a paid
   * plan starts as `past_due` with a renewal order to pay. Null when there was nothing to do.
   */
  async renew(em: EntityManager, subscriptionId: string): Promise<RenewalResult | null> {
    const now = this.clock.now();
    const result = await inTransaction(em, async (tx) => {
      const sub = await lockRow(tx, Subscription, { id: subscriptionId, currentPeriodEnd: { $lte: now } });
      if (!sub) return null;
      const teamId = teamIdOf(sub);
      const balance = await this.ledger.lock(tx, teamId);
      const from = { planCode: sub.planCode, billingPeriod: sub.billingPeriod };
      let plan: Plan;
      let period: BillingPeriod;
      let anchor: Date;
      let reason: PlanChangeReason;
      if (sub.cancelAtPeriodEnd || sub.status === 'past_due') {
        plan = this.plans.fallback;
        period = 'monthly';
        anchor = sub.currentPeriodEnd;
        reason = sub.cancelAtPeriodEnd ? 'renewal_canceled' : 'renewal_unpaid';
      } else {
        const code = sub.scheduledPlanCode ?? sub.planCode;
        const found = this.plans.find(code);
        if (!found) this.log.warn({ teamId, planCode: code }, `billing: plan "${code}" is no longer configured; the team falls back to ${this.plans.fallback.code}`);
        plan = found ?? this.plans.fallback;
        period = found ? (sub.scheduledBillingPeriod ?? sub.billingPeriod) : 'monthly';
        reason = sub.scheduledPlanCode ? 'scheduled_change' : 'renewal';
        anchor = plan.code === sub.planCode && period === sub.billingPeriod ? sub.anchorAt : sub.currentPeriodEnd;
      }
      const span = periodContaining(anchor, monthsOf(period), now);
      const price = this.plans.priceOf(plan, period);
      Object.assign(sub, {
        planCode: plan.code,
        billingPeriod: period,
        status: price > 0 ? 'past_due' : 'active',
        monthlyCredits: plan.monthlyCredits,
        anchorAt: anchor,
        currentPeriodStart: span.start,
        currentPeriodEnd: span.end,
        cancelAtPeriodEnd: false,
        canceledAt: null,
        scheduledPlanCode: null,
        scheduledBillingPeriod: null,
        updatedAt: now,
      });
      const month = periodContaining(anchor, 1, now);
      const what = reason === 'renewal_canceled' ? 'renewal was cancelled' : reason === 'renewal_unpaid' ? 'renewal was not paid' : 'new period';
      this.ledger.startPeriod(
        tx,
        balance,
        { start: month.start, end: month.end, credits: plan.monthlyCredits, reason: `${plan.name} plan: monthly credits (${what})`, uniqueKey: `grant:${teamId}:${month.start.toISOString()}` },
        now,
      );
      if (reason === 'renewal_canceled' || reason === 'renewal_unpaid') await this.cancelPendingRenewals(tx, teamId, now);
      let orderId: string | null = null;
      if (price > 0) {
        orderId = this.ids.next();
        tx.create(PaymentOrder, {
          id: orderId,
          team: tx.getReference(Team, teamId),
          kind: 'renewal',
          status: 'pending',
          planCode: plan.code,
          billingPeriod: period,
          periodStart: span.start,
          packCode: null,
          credits: null,
          description: `${plan.name} plan (${period}), period from ${span.start.toISOString().slice(0, 10)}`,
          originalAmount: price,
          discountAmount: 0,
          amount: price,
          currency: this.plans.currency,
          coupon: null,
          couponCode: null,
          couponCounted: false,
          provider: this.provider.id,
          providerReference: null,
          paymentUrl: null,
          instructions: null,
          userId: null,
          uniqueKey: `renewal:${sub.id}:${span.start.toISOString()}`,
          checkoutAttempts: 0,
          expiresAt: new Date(span.start.getTime() + this.config.renewalGraceDays * DAY_MS),
          paidAt: null,
          paidVia: null,
          closedAt: null,
          version: 1,
          createdAt: now,
          updatedAt: now,
        } as PaymentOrder);
      }
      const change: PlanChange = { teamId, from, to: { planCode: plan.code, billingPeriod: period }, reason };
      return { teamId, change, orderId };
    });
    if (result) await this.hooks.emit('billing.plan_changed', result.change);
    return result;
  }

  /** Teams whose credit month ended while their (yearly) billing period goes on. */
  async dueForCreditMonth(em: EntityManager, limit: number): Promise<string[]> {
    const now = this.clock.now();
    const rows = await em.find(CreditBalance, { periodEnd: { $lte: now } }, { fields: ['team'], orderBy: { periodEnd: 'asc' }, limit });
    return rows.map((row) => teamIdOf(row));
  }

  /** Starts the next credit month of a team whose billing period is not over (yearly plans). */
  async rollCreditMonth(em: EntityManager, teamId: string): Promise<boolean> {
    const now = this.clock.now();
    return inTransaction(em, async (tx) => {
      const sub = await lockRow(tx, Subscription, { team: teamId, currentPeriodEnd: { $gt: now } });
      if (!sub) return false;
      const balance = await lockRow(tx, CreditBalance, { team: teamId, periodEnd: { $lte: now } });
      if (!balance) return false;
      const month = periodContaining(sub.anchorAt, 1, now);
      const plan = this.plans.find(sub.planCode);
      this.ledger.startPeriod(
        tx,
        balance,
        { start: month.start, end: month.end, credits: sub.monthlyCredits, reason: `${plan?.name ?? sub.planCode} plan: monthly credits`, uniqueKey: `grant:${teamId}:${month.start.toISOString()}` },
        now,
      );
      return true;
    });
  }

  /** past_due subscriptions whose grace period is over. */
  async overdue(em: EntityManager, limit: number): Promise<string[]> {
    const cutoff = new Date(this.clock.nowMs() - this.config.renewalGraceDays * DAY_MS);
    const rows = await em.find(Subscription, { status: 'past_due', currentPeriodStart: { $lte: cutoff }, team: { deletedAt: null } }, { fields: ['id'], limit });
    return rows.map((row) => row.id);
  }

  /** Moves a subscription whose renewal stayed unpaid past the grace period to the fallback plan. */
  async endOverdue(em: EntityManager, subscriptionId: string): Promise<boolean> {
    const now = this.clock.now();
    const cutoff = new Date(now.getTime() - this.config.renewalGraceDays * DAY_MS);
    const change = await inTransaction(em, async (tx) => {
      const sub = await lockRow(tx, Subscription, { id: subscriptionId, status: 'past_due', currentPeriodStart: { $lte: cutoff } });
      if (!sub) return null;
      const teamId = teamIdOf(sub);
      const balance = await this.ledger.lock(tx, teamId);
      const fallback = this.plans.fallback;
      const from = this.startPlan(tx, sub, balance, fallback, 'monthly', now, {
        reason: `${fallback.name} plan: monthly credits (renewal not paid within ${this.config.renewalGraceDays} days)`,
        grantKey: `grant:${teamId}:${now.toISOString()}`,
      });
      await this.cancelPendingRenewals(tx, teamId, now);
      return { teamId, from, to: { planCode: fallback.code, billingPeriod: 'monthly' as const }, reason: 'renewal_unpaid' as const };
    });
    if (change) await this.hooks.emit('billing.plan_changed', change);
    return change !== null;
  }

  /** Pending renewal orders of a team are void once the team left that period. */
  async cancelPendingRenewals(tx: EntityManager, teamId: string, now: Date): Promise<void> {
    await tx.nativeUpdate(PaymentOrder, { team: teamId, kind: 'renewal', status: 'pending' }, { status: 'canceled', closedAt: now, updatedAt: now });
  }
}
