import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { Subscription } from '../entities/subscription.entity.js';
import { billingErrors, teamGone } from '../errors.js';
import { isBillingPeriod, type BillingPeriod } from '../periods.js';
import { BillingAccountService } from './billing-account.service.js';
import { CreditService, type BalanceSnapshot } from './credit.service.js';
import { OrderService, type PaymentGuidance } from './order.service.js';
import type { PaymentOrder } from '../entities/payment-order.entity.js';
import { PlanCatalog } from './plan-catalog.js';
import { SubscriptionLifecycle } from './subscription-lifecycle.js';
import { inTransaction } from '../../../kernel/transaction.js';

export interface ChangePlanInput {
  userId: string;
  customerEmail?: string;
  teamId: string;
  targetPlanCode: string;
  billingPeriod: string;
  couponCode?: string;
}

/**
 * What `change-plan` did. `downgrade_scheduled`: the target applies at `effectiveAt` (the end
 * of the current period). `payment_required`: an upgrade; pay `order` as `payment` says and it
 * applies at once. `upgraded`: an upgrade with nothing to pay (a 100% coupon), applied now.
 * `scheduled_change_canceled`: the target is the current plan, which cancels the scheduled
 * change. `unchanged`: the target is the current plan and nothing was scheduled.
 */
export type ChangePlanResult =
  | { action: 'downgrade_scheduled'; scheduledPlanCode: string; scheduledBillingPeriod: BillingPeriod; effectiveAt: Date }
  | { action: 'scheduled_change_canceled' | 'unchanged'; scheduledPlanCode: null; effectiveAt: null }
  | { action: 'payment_required'; targetPlanCode: string; billingPeriod: BillingPeriod; scheduledPlanCode: string | null; effectiveAt: null; order: PaymentOrder; payment: PaymentGuidance }
  | { action: 'upgraded'; targetPlanCode: string; billingPeriod: BillingPeriod; scheduledPlanCode: null; effectiveAt: Date; order: PaymentOrder };

export interface Overview {
  subscription: Subscription;
  balance: BalanceSnapshot;
}

/** The team-facing subscription operations of the spec's Billing endpoints. */
@injectable()
export class SubscriptionService {
  constructor(
    @inject(BillingAccountService) private readonly accounts: BillingAccountService,
    @inject(PlanCatalog) private readonly plans: PlanCatalog,
    @inject(SubscriptionLifecycle) private readonly lifecycle: SubscriptionLifecycle,
    @inject(OrderService) private readonly orders: OrderService,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  /** A team's subscription and balance (the team gets its billing records on first read). */
  async overview(em: EntityManager, teamId: string): Promise<Overview> {
    await this.accounts.ensure(em, teamId);
    const subscription = await em.findOneOrFail(Subscription, { team: teamId }, { refresh: true, failHandler: teamGone });
    return { subscription, balance: await this.credits.balance(em, teamId) };
  }

  async changePlan(em: EntityManager, input: ChangePlanInput): Promise<ChangePlanResult> {
    const plan = this.plans.find(input.targetPlanCode);
    if (!plan) throw billingErrors.invalidPlan(input.targetPlanCode, this.plans.list().map((p) => p.code));
    if (!isBillingPeriod(input.billingPeriod)) throw billingErrors.invalidBillingPeriod(input.billingPeriod);
    const period: BillingPeriod = input.billingPeriod;
    const target = { planCode: plan.code, billingPeriod: period };
    await this.accounts.ensure(em, input.teamId);
    const current = await em.findOneOrFail(Subscription, { team: input.teamId }, { refresh: true, failHandler: teamGone });
    if (this.plans.compare(target, current) > 0) {
      const placed = await this.orders.placePlanOrder(em, {
        teamId: input.teamId,
        userId: input.userId,
        customerEmail: input.customerEmail,
        plan,
        billingPeriod: period,
        couponCode: input.couponCode,
      });
      if (!placed.payment) {
        return { action: 'upgraded', targetPlanCode: plan.code, billingPeriod: period, scheduledPlanCode: null, effectiveAt: placed.order.paidAt!, order: placed.order };
      }
      return {
        action: 'payment_required',
        targetPlanCode: plan.code,
        billingPeriod: period,
        scheduledPlanCode: current.scheduledPlanCode,
        effectiveAt: null,
        order: placed.order,
        payment: placed.payment,
      };
    }
    if (input.couponCode) throw billingErrors.invalidCoupon('A coupon applies to payment orders; this change needs no payment.');
    return inTransaction(em, async (tx) => {
      const sub = await this.lifecycle.lockExisting(tx, input.teamId);
      const cmp = this.plans.compare(target, sub);
      if (cmp > 0) {
        // The plan changed under us (a payment landed): ask again rather than guess.
        throw billingErrors.planChanged();
      }
      sub.updatedAt = this.clock.now();
      if (cmp === 0) {
        const had = sub.scheduledPlanCode !== null;
        sub.scheduledPlanCode = null;
        sub.scheduledBillingPeriod = null;
        return { action: had ? 'scheduled_change_canceled' : 'unchanged', scheduledPlanCode: null, effectiveAt: null } as const;
      }
      sub.scheduledPlanCode = plan.code;
      sub.scheduledBillingPeriod = period;
      return { action: 'downgrade_scheduled', scheduledPlanCode: plan.code, scheduledBillingPeriod: period, effectiveAt: sub.currentPeriodEnd } as const;
    });
  }

  /** Stops renewal at the end of the current period (idempotent). 400 NOTHING_TO_CANCEL on the fallback plan. */
  async cancelRenewal(em: EntityManager, teamId: string): Promise<Subscription> {
    await this.accounts.ensure(em, teamId);
    return inTransaction(em, async (tx) => {
      const sub = await this.lifecycle.lockExisting(tx, teamId);
      if (this.plans.isFallback(sub.planCode)) throw billingErrors.nothingToCancel(this.plans.fallback.name);
      if (!sub.cancelAtPeriodEnd) {
        const now = this.clock.now();
        sub.cancelAtPeriodEnd = true;
        sub.canceledAt = now;
        sub.updatedAt = now;
      }
      return sub;
    });
  }

  /** Undoes `cancelRenewal` while the period runs (idempotent). */
  async resumeRenewal(em: EntityManager, teamId: string): Promise<Subscription> {
    await this.accounts.ensure(em, teamId);
    return inTransaction(em, async (tx) => {
      const sub = await this.lifecycle.lockExisting(tx, teamId);
      if (sub.cancelAtPeriodEnd) {
        sub.cancelAtPeriodEnd = false;
        sub.canceledAt = null;
        sub.updatedAt = this.clock.now();
      }
      return sub;
    });
  }
}
