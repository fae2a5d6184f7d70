import type { Coupon } from './entities/coupon.entity.js';
import type { CreditLedgerEntry } from './entities/credit-ledger-entry.entity.js';
import type { CreditReservation } from './entities/credit-reservation.entity.js';
import type { PaymentOrder } from './entities/payment-order.entity.js';
import type { Subscription } from './entities/subscription.entity.js';
import type { BalanceSnapshot } from './services/credit.service.js';
import type { CreditPack, Plan } from './services/plan-catalog.js';
import type { BalanceView, CouponView, LedgerEntryView, OrderView, PackView, PlanView, ReservationView, SubscriptionView } from './schemas.js';

const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

export const toSubscriptionView = (s: Subscription): SubscriptionView => ({
  id: s.id,
  teamId: s.team.id,
  planCode: s.planCode,
  billingPeriod: s.billingPeriod,
  status: s.status,
  monthlyCredits: s.monthlyCredits,
  currentPeriodStart: iso(s.currentPeriodStart)!,
  currentPeriodEnd: iso(s.currentPeriodEnd)!,
  cancelAtPeriodEnd: s.cancelAtPeriodEnd,
  canceledAt: iso(s.canceledAt),
  scheduledPlanCode: s.scheduledPlanCode,
  scheduledBillingPeriod: s.scheduledBillingPeriod,
  createdAt: iso(s.createdAt)!,
  updatedAt: iso(s.updatedAt)!,
});

export const toBalanceView = ({ balance: b, reservedCredits }: BalanceSnapshot): BalanceView => ({
  teamId: b.team.id,
  totalCredits: b.grantCredits + b.purchaseCredits,
  grantCredits: b.grantCredits,
  purchaseCredits: b.purchaseCredits,
  reservedCredits,
  periodStart: iso(b.periodStart)!,
  periodEnd: iso(b.periodEnd)!,
  periodGrantedCredits: b.periodGrantedCredits,
  updatedAt: iso(b.updatedAt)!,
});

export const toOrderView = (o: PaymentOrder): OrderView => ({
  id: o.id,
  teamId: o.team.id,
  kind: o.kind,
  status: o.status,
  description: o.description,
  planCode: o.planCode,
  billingPeriod: o.billingPeriod,
  periodStart: iso(o.periodStart),
  packCode: o.packCode,
  credits: o.credits,
  originalAmount: o.originalAmount,
  discountAmount: o.discountAmount,
  amount: o.amount,
  currency: o.currency,
  couponCode: o.couponCode,
  provider: o.provider,
  providerReference: o.providerReference,
  paymentUrl: o.paymentUrl,
  instructions: o.instructions,
  userId: o.userId,
  expiresAt: iso(o.expiresAt)!,
  paidAt: iso(o.paidAt),
  paidVia: o.paidVia,
  closedAt: iso(o.closedAt),
  createdAt: iso(o.createdAt)!,
  updatedAt: iso(o.updatedAt)!,
});

export const toCouponView = (c: Coupon): CouponView => ({
  id: c.id,
  code: c.code,
  percentOff: c.percentOff,
  amountOff: c.amountOff,
  expiresAt: iso(c.expiresAt),
  maxRedemptions: c.maxRedemptions,
  redemptions: c.redemptions,
  disabled: c.disabledAt !== null,
  disabledAt: iso(c.disabledAt),
  createdAt: iso(c.createdAt)!,
  updatedAt: iso(c.updatedAt)!,
});

export const toReservationView = (r: CreditReservation): ReservationView => ({
  id: r.id,
  teamId: r.team.id,
  status: r.status,
  amount: r.amount,
  usedCredits: r.usedCredits,
  reason: r.reason,
  expiresAt: iso(r.expiresAt)!,
  closedAt: iso(r.closedAt),
  createdAt: iso(r.createdAt)!,
  updatedAt: iso(r.updatedAt)!,
});

export const toLedgerEntryView = (e: CreditLedgerEntry): LedgerEntryView => ({
  id: e.id,
  kind: e.kind,
  grantDelta: e.grantDelta,
  purchaseDelta: e.purchaseDelta,
  delta: e.grantDelta + e.purchaseDelta,
  grantAfter: e.grantAfter,
  purchaseAfter: e.purchaseAfter,
  totalAfter: e.grantAfter + e.purchaseAfter,
  reason: e.reason,
  reservationId: e.reservationId,
  orderId: e.orderId,
  createdAt: iso(e.createdAt)!,
});

export const toPlanView = (p: Plan): PlanView => ({ ...p });
export const toPackView = (p: CreditPack): PackView => ({ ...p });
