import type { BillingPeriod } from './periods.js';
import type { OrderKind } from './entities/payment-order.entity.js';

/** Why a team's plan changed. */
export type PlanChangeReason = 'upgrade' | 'renewal' | 'scheduled_change' | 'renewal_canceled' | 'renewal_unpaid';

declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /** After a team's plan or billing period changed (committed). */
    'billing.plan_changed': {
      teamId: string;
      from: { planCode: string; billingPeriod: BillingPeriod };
      to: { planCode: string; billingPeriod: BillingPeriod };
      reason: PlanChangeReason;
    };
    /**
     * After a charge (a reservation settled with credits used, committed) took the team's balance
     * from at least `billing.creditLowThreshold` to below it.
     */
    'billing.credits_low': { teamId: string; totalCredits: number; threshold: number };
    /** After an order was marked paid and applied (committed). */
    'billing.order_paid': { orderId: string; teamId: string; kind: OrderKind; amount: number; currency: string };
  }
}

export {};
