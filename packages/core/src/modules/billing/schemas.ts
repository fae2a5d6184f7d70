/** The billing responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, nullable, stringEnum, Type, uuid, type Static, type TSchema } from '../../kernel/http/response-schema.js';

const period = () => stringEnum(['monthly', 'yearly']);

/** `{ success: true, data }`, the billing envelope. */
export const envelope = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });
export const successOnly = Type.Object({ success: Type.Literal(true) });

export const subscriptionSchema = Type.Object({
  id: uuid(),
  teamId: uuid(),
  planCode: Type.String({ example: 'pro' }),
  billingPeriod: period(),
  status: stringEnum(['active', 'past_due'], { description: '`past_due`: renewed, renewal order not paid yet (grace period).' }),
  monthlyCredits: Type.Integer(),
  currentPeriodStart: dateTime(),
  currentPeriodEnd: dateTime(),
  cancelAtPeriodEnd: Type.Boolean(),
  canceledAt: nullable(dateTime()),
  scheduledPlanCode: nullable(Type.String()),
  scheduledBillingPeriod: nullable(period()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type SubscriptionView = Static<typeof subscriptionSchema>;

export const balanceSchema = Type.Object({
  teamId: uuid(),
  totalCredits: Type.Integer({ description: 'grantCredits + purchaseCredits: what can be spent now.' }),
  grantCredits: Type.Integer({ description: 'Plan credits of the current month; they expire at periodEnd.' }),
  purchaseCredits: Type.Integer({ description: 'Bought credits; they never expire.' }),
  reservedCredits: Type.Integer({ description: 'Held by open reservations (already taken from the totals above).' }),
  periodStart: dateTime(),
  periodEnd: dateTime(),
  periodGrantedCredits: Type.Integer(),
  updatedAt: dateTime(),
});
export type BalanceView = Static<typeof balanceSchema>;

export const overviewSchema = envelope(Type.Object({ subscription: nullable(subscriptionSchema), balance: nullable(balanceSchema) }));

export const orderSchema = Type.Object({
  id: uuid(),
  teamId: uuid(),
  kind: stringEnum(['plan', 'renewal', 'credits']),
  status: stringEnum(['pending', 'paid', 'expired', 'canceled']),
  description: Type.String(),
  planCode: nullable(Type.String()),
  billingPeriod: nullable(period()),
  periodStart: nullable(dateTime()),
  packCode: nullable(Type.String()),
  credits: nullable(Type.Integer()),
  originalAmount: Type.Integer({ description: 'Minor units (cents).' }),
  discountAmount: Type.Integer(),
  amount: Type.Integer({ description: 'Due: originalAmount - discountAmount.' }),
  currency: Type.String(),
  couponCode: nullable(Type.String()),
  provider: Type.String(),
  providerReference: nullable(Type.String()),
  paymentUrl: nullable(Type.String({ format: 'uri' })),
  instructions: nullable(Type.String()),
  userId: nullable(uuid()),
  expiresAt: dateTime(),
  paidAt: nullable(dateTime()),
  paidVia: nullable(Type.String()),
  closedAt: nullable(dateTime()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type OrderView = Static<typeof orderSchema>;

export const paymentSchema = Type.Object({
  provider: Type.String({ example: 'stripe' }),
  reference: Type.String({ description: "The provider's checkout id (Stripe Checkout Session id; the order id for manual payments)." }),
  url: nullable(Type.String({ format: 'uri' }), { description: 'Send the payer here; null for manual payments.' }),
  instructions: nullable(Type.String(), { description: 'What to do when there is no page (manual payments).' }),
  expiresAt: dateTime(),
});
/** How to pay an order: where to send the payer, or what to tell them. */
export type PaymentGuidance = Static<typeof paymentSchema>;

export const paymentGuidanceSchema = Type.Object({
  action: Type.Literal('payment_required'),
  targetPlanCode: Type.String(),
  billingPeriod: period(),
  scheduledPlanCode: nullable(Type.String()),
  effectiveAt: Type.Null({ description: 'The plan applies when the order is paid.' }),
  order: orderSchema,
  payment: paymentSchema,
});

const planChanges = [
  Type.Object({ action: Type.Literal('downgrade_scheduled'), scheduledPlanCode: Type.String(), scheduledBillingPeriod: period(), effectiveAt: dateTime() }),
  Type.Object({ action: stringEnum(['scheduled_change_canceled', 'unchanged']), scheduledPlanCode: Type.Null(), effectiveAt: Type.Null() }),
  paymentGuidanceSchema,
  Type.Object({
    action: Type.Literal('upgraded'),
    targetPlanCode: Type.String(),
    billingPeriod: period(),
    scheduledPlanCode: Type.Null(),
    effectiveAt: dateTime(),
    order: orderSchema,
  }),
] as const;
/** What a plan change did, one of four outcomes told apart by `action`. */
export type PlanChangeView = Static<(typeof planChanges)[number]>;
// Published as `oneOf` (exactly one outcome matches; TypeBox's Union would publish `anyOf`).
export const changePlanSchema = envelope(Type.Unsafe<PlanChangeView>({ oneOf: [...planChanges] }));

export const purchaseSchema = envelope(Type.Object({ order: orderSchema, payment: nullable(paymentSchema) }));

export const planSchema = Type.Object({
  code: Type.String(),
  name: Type.String(),
  rank: Type.Integer(),
  monthlyCredits: Type.Integer(),
  monthlyPrice: Type.Integer(),
  yearlyPrice: Type.Integer(),
  currency: Type.String(),
});
export type PlanView = Static<typeof planSchema>;
export const packSchema = Type.Object({ code: Type.String(), name: Type.String(), credits: Type.Integer(), price: Type.Integer(), currency: Type.String() });
export type PackView = Static<typeof packSchema>;
export const catalogSchema = envelope(
  Type.Object({ currency: Type.String(), fallbackPlan: Type.String(), plans: Type.Array(planSchema), creditPacks: Type.Array(packSchema) }),
);

export const reservationSchema = Type.Object({
  id: uuid(),
  teamId: uuid(),
  status: stringEnum(['held', 'settled', 'released']),
  amount: Type.Integer(),
  usedCredits: nullable(Type.Integer()),
  reason: Type.String(),
  expiresAt: dateTime(),
  closedAt: nullable(dateTime()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type ReservationView = Static<typeof reservationSchema>;

export const ledgerEntrySchema = Type.Object({
  id: uuid(),
  kind: stringEnum(['grant', 'purchase', 'reservation', 'settlement', 'release', 'expiry']),
  grantDelta: Type.Integer(),
  purchaseDelta: Type.Integer(),
  delta: Type.Integer(),
  grantAfter: Type.Integer(),
  purchaseAfter: Type.Integer(),
  totalAfter: Type.Integer(),
  reason: Type.String(),
  reservationId: nullable(uuid()),
  orderId: nullable(uuid()),
  createdAt: dateTime(),
});
export type LedgerEntryView = Static<typeof ledgerEntrySchema>;

export const couponSchema = Type.Object({
  id: uuid(),
  code: Type.String(),
  percentOff: nullable(Type.Integer()),
  amountOff: nullable(Type.Integer()),
  expiresAt: nullable(dateTime()),
  maxRedemptions: nullable(Type.Integer()),
  redemptions: Type.Integer({ description: 'Orders holding the coupon (pending or paid).' }),
  disabled: Type.Boolean(),
  disabledAt: nullable(dateTime()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type CouponView = Static<typeof couponSchema>;

export const markPaidSchema = Type.Object({ order: orderSchema, alreadyPaid: Type.Boolean() });

export const webhookResultSchema = Type.Object({ received: Type.Integer(), applied: Type.Integer(), duplicates: Type.Integer() });
export type WebhookResult = Static<typeof webhookResultSchema>;
