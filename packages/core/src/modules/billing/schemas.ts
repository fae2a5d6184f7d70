/** JSON Schemas of the billing responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const period = { enum: ['monthly', 'yearly'] } as const;
const object = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({ type: 'object', required, properties });

/** `{ success: true, data }`, the billing envelope. */
export const envelope = (data: Record<string, unknown>) => object({ success: { const: true }, data });
export const successOnly = object({ success: { const: true } });
export const pageOfSchema = (items: Record<string, unknown>) => object({ items: { type: 'array', items }, total: int, page: int, size: int });

export const subscriptionSchema = object({
  id: uuid,
  teamId: uuid,
  planCode: { ...str, example: 'pro' },
  billingPeriod: period,
  status: { enum: ['active', 'past_due'], description: '`past_due`: renewed, renewal order not paid yet (grace period).' },
  monthlyCredits: int,
  currentPeriodStart: dateTime,
  currentPeriodEnd: dateTime,
  cancelAtPeriodEnd: { type: 'boolean' },
  canceledAt: nullable(dateTime),
  scheduledPlanCode: nullable(str),
  scheduledBillingPeriod: nullable(period),
  createdAt: dateTime,
  updatedAt: dateTime,
});

export const balanceSchema = object({
  teamId: uuid,
  totalCredits: { ...int, description: 'grantCredits + purchaseCredits: what can be spent now.' },
  grantCredits: { ...int, description: 'Plan credits of the current month; they expire at periodEnd.' },
  purchaseCredits: { ...int, description: 'Bought credits; they never expire.' },
  reservedCredits: { ...int, description: 'Held by open reservations (already taken from the totals above).' },
  periodStart: dateTime,
  periodEnd: dateTime,
  periodGrantedCredits: int,
  updatedAt: dateTime,
});

export const overviewSchema = envelope(object({ subscription: nullable(subscriptionSchema), balance: nullable(balanceSchema) }));

export const orderSchema = object({
  id: uuid,
  teamId: uuid,
  kind: { enum: ['plan', 'renewal', 'credits'] },
  status: { enum: ['pending', 'paid', 'expired', 'canceled'] },
  description: str,
  planCode: nullable(str),
  billingPeriod: nullable(period),
  periodStart: nullable(dateTime),
  packCode: nullable(str),
  credits: nullable(int),
  originalAmount: { ...int, description: 'Minor units (cents).' },
  discountAmount: int,
  amount: { ...int, description: 'Due: originalAmount - discountAmount.' },
  currency: str,
  couponCode: nullable(str),
  provider: str,
  providerReference: nullable(str),
  paymentUrl: nullable({ ...str, format: 'uri' }),
  instructions: nullable(str),
  userId: nullable(uuid),
  expiresAt: dateTime,
  paidAt: nullable(dateTime),
  paidVia: nullable(str),
  closedAt: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime,
});

export const paymentSchema = object({
  provider: { ...str, example: 'stripe' },
  reference: { ...str, description: "The provider's checkout id (Stripe Checkout Session id; the order id for manual payments)." },
  url: { ...nullable({ ...str, format: 'uri' }), description: 'Send the payer here; null for manual payments.' },
  instructions: { ...nullable(str), description: 'What to do when there is no page (manual payments).' },
  expiresAt: dateTime,
});

export const paymentGuidanceSchema = object({
  action: { const: 'payment_required' },
  targetPlanCode: str,
  billingPeriod: period,
  scheduledPlanCode: nullable(str),
  effectiveAt: { type: 'null', description: 'The plan applies when the order is paid.' },
  order: orderSchema,
  payment: paymentSchema,
});

export const changePlanSchema = envelope({
  oneOf: [
    object({ action: { const: 'downgrade_scheduled' }, scheduledPlanCode: str, scheduledBillingPeriod: period, effectiveAt: dateTime }),
    object({ action: { enum: ['scheduled_change_canceled', 'unchanged'] }, scheduledPlanCode: { type: 'null' }, effectiveAt: { type: 'null' } }),
    paymentGuidanceSchema,
    object({ action: { const: 'upgraded' }, targetPlanCode: str, billingPeriod: period, scheduledPlanCode: { type: 'null' }, effectiveAt: dateTime, order: orderSchema }),
  ],
});

export const purchaseSchema = envelope(object({ order: orderSchema, payment: nullable(paymentSchema) }));

export const planSchema = object({ code: str, name: str, rank: int, monthlyCredits: int, monthlyPrice: int, yearlyPrice: int, currency: str });
export const packSchema = object({ code: str, name: str, credits: int, price: int, currency: str });
export const catalogSchema = envelope(object({ currency: str, fallbackPlan: str, plans: { type: 'array', items: planSchema }, creditPacks: { type: 'array', items: packSchema } }));

export const reservationSchema = object({
  id: uuid,
  teamId: uuid,
  status: { enum: ['held', 'settled', 'released'] },
  amount: int,
  usedCredits: nullable(int),
  reason: str,
  expiresAt: dateTime,
  closedAt: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime,
});

export const ledgerEntrySchema = object({
  id: uuid,
  kind: { enum: ['grant', 'purchase', 'reservation', 'settlement', 'release', 'expiry'] },
  grantDelta: int,
  purchaseDelta: int,
  delta: int,
  grantAfter: int,
  purchaseAfter: int,
  totalAfter: int,
  reason: str,
  reservationId: nullable(uuid),
  orderId: nullable(uuid),
  createdAt: dateTime,
});

export const couponSchema = object({
  id: uuid,
  code: str,
  percentOff: nullable(int),
  amountOff: nullable(int),
  expiresAt: nullable(dateTime),
  maxRedemptions: nullable(int),
  redemptions: { ...int, description: 'Orders holding the coupon (pending or paid).' },
  disabled: { type: 'boolean' },
  disabledAt: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime,
});

export const webhookResultSchema = object({ received: int, applied: int, duplicates: int });
