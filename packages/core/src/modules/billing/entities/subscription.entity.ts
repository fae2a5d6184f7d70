import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';
import type { BillingPeriod } from '../periods.js';

/** `active`: in a period, paid or free. `past_due`: renewed, renewal order not paid yet (grace). */
export const subscriptionStatuses = ['active', 'past_due'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

/** A team's plan. Exactly one per team, created on the fallback plan the first time billing sees the team. */
export class Subscription {
  id!: string;
  team!: Team;
  planCode!: string;
  billingPeriod!: BillingPeriod;
  status!: SubscriptionStatus;
  /** The plan's monthly credits when the current period started. */
  monthlyCredits!: number;
  /** Periods are whole months (or years) counted from this instant; reset when the plan changes. */
  anchorAt!: Date;
  currentPeriodStart!: Date;
  currentPeriodEnd!: Date;
  cancelAtPeriodEnd!: boolean;
  canceledAt!: Date | null;
  scheduledPlanCode!: string | null;
  scheduledBillingPeriod!: BillingPeriod | null;
  /** Bumped by every change; also how a transaction takes the row's write lock first. */
  version!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const SubscriptionSchema = new EntitySchema<Subscription>({
  class: Subscription,
  tableName: 'billing_subscriptions',
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade', unique: true },
    planCode: { type: 'string', length: 64 },
    billingPeriod: { type: 'string', length: 16 },
    status: { type: 'string', length: 16 },
    monthlyCredits: { type: 'integer' },
    anchorAt: { type: 'datetime' },
    currentPeriodStart: { type: 'datetime' },
    currentPeriodEnd: { type: 'datetime', index: true },
    cancelAtPeriodEnd: { type: 'boolean', default: false },
    canceledAt: { type: 'datetime', nullable: true },
    scheduledPlanCode: { type: 'string', length: 64, nullable: true },
    scheduledBillingPeriod: { type: 'string', length: 16, nullable: true },
    version: { type: 'integer', default: 1 },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
