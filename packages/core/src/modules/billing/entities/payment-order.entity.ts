import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';
import type { BillingPeriod } from '../periods.js';
import { Coupon } from './coupon.entity.js';

/** `plan`: an upgrade. `renewal`: the next period of a paid plan. `credits`: a credit pack. */
export const orderKinds = ['plan', 'renewal', 'credits'] as const;
export type OrderKind = (typeof orderKinds)[number];

/** `pending` until paid; `expired` when nobody paid in time; `canceled` when superseded or the provider failed. */
export const orderStatuses = ['pending', 'paid', 'expired', 'canceled'] as const;
export type OrderStatus = (typeof orderStatuses)[number];

/** Something a team pays for once, through the PaymentProvider. Amounts in the currency's minor unit. */
export class PaymentOrder {
  id!: string;
  team!: Team;
  kind!: OrderKind;
  status!: OrderStatus;
  planCode!: string | null;
  billingPeriod!: BillingPeriod | null;
  /** For renewals: the start of the period this order pays for. */
  periodStart!: Date | null;
  packCode!: string | null;
  credits!: number | null;
  description!: string;
  originalAmount!: number;
  discountAmount!: number;
  amount!: number;
  currency!: string;
  coupon!: Coupon | null;
  couponCode!: string | null;
  /** Whether the coupon redemption is currently counted (released when the order expires or is canceled). */
  couponCounted!: boolean;
  provider!: string;
  providerReference!: string | null;
  paymentUrl!: string | null;
  instructions!: string | null;
  /** Who placed it (null for renewals). */
  userId!: string | null;
  /** Makes an order happen at most once (`renewal:<subscription>:<period start>`). */
  uniqueKey!: string | null;
  /** How many checkouts were created for it (used for idempotency keys). */
  checkoutAttempts!: number;
  expiresAt!: Date;
  paidAt!: Date | null;
  /** `admin:<user id>`, `provider:<event id>` or `free` (nothing to pay). */
  paidVia!: string | null;
  closedAt!: Date | null;
  version!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const PaymentOrderSchema = new EntitySchema<PaymentOrder>({
  class: PaymentOrder,
  tableName: 'billing_orders',
  indexes: [{ properties: ['status', 'expiresAt'] }, { properties: ['team', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    kind: { type: 'string', length: 16 },
    status: { type: 'string', length: 16 },
    planCode: { type: 'string', length: 64, nullable: true },
    billingPeriod: { type: 'string', length: 16, nullable: true },
    periodStart: { type: 'datetime', nullable: true },
    packCode: { type: 'string', length: 64, nullable: true },
    credits: { type: 'integer', nullable: true },
    description: { type: 'string', length: 200 },
    originalAmount: { type: 'integer' },
    discountAmount: { type: 'integer' },
    amount: { type: 'integer' },
    currency: { type: 'string', length: 3 },
    coupon: { kind: 'm:1', entity: () => Coupon, nullable: true, deleteRule: 'set null' },
    couponCode: { type: 'string', length: 64, nullable: true },
    couponCounted: { type: 'boolean', default: false },
    provider: { type: 'string', length: 32 },
    providerReference: { type: 'string', length: 255, nullable: true, index: true },
    paymentUrl: { type: 'string', length: 2048, nullable: true },
    instructions: { type: 'text', nullable: true },
    userId: { type: 'uuid', nullable: true },
    uniqueKey: { type: 'string', length: 200, nullable: true, unique: true },
    checkoutAttempts: { type: 'integer', default: 0 },
    expiresAt: { type: 'datetime' },
    paidAt: { type: 'datetime', nullable: true },
    paidVia: { type: 'string', length: 300, nullable: true },
    closedAt: { type: 'datetime', nullable: true },
    version: { type: 'integer', default: 1 },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
