import { TrellisError } from '../../kernel/errors.js';

/**
 * Billing's own error codes. The spec spells the billing codes in upper case (NO_TEAM,
 * BAD_REQUEST, FORBIDDEN); codes Trellis adds to the area follow that spelling, except
 * `insufficient_credits`, which the spec spells in lower case for runs.
 */
export const billingErrors = {
  noTeam: (message = 'You are in no team, or not in the given team.') => new TrellisError('bad_request', 'NO_TEAM', message),
  forbidden: () => new TrellisError('forbidden', 'FORBIDDEN', 'This needs the team role owner or admin.'),
  invalidPlan: (code: string, known: string[]) =>
    new TrellisError('bad_request', 'INVALID_PLAN', `There is no plan "${code}" (plans: ${known.join(', ')}).`),
  invalidBillingPeriod: (period: string) =>
    new TrellisError('bad_request', 'INVALID_BILLING_PERIOD', `The billing period must be monthly or yearly, not "${period}".`),
  invalidPack: (code: string, known: string[]) =>
    new TrellisError('bad_request', 'INVALID_CREDIT_PACK', `There is no credit pack "${code}" (packs: ${known.join(', ') || 'none'}).`),
  invalidCoupon: (message: string) => new TrellisError('bad_request', 'INVALID_COUPON', message),
  couponExhausted: (code: string) => new TrellisError('bad_request', 'COUPON_EXHAUSTED', `The coupon ${code} has been redeemed as many times as it allows.`),
  nothingToCancel: (plan: string) =>
    new TrellisError('bad_request', 'NOTHING_TO_CANCEL', `The team is on the ${plan} plan, which does not renew for payment; there is nothing to cancel.`),
  planChanged: () => new TrellisError('conflict', 'PLAN_CHANGED', 'The plan changed while this request ran; read the subscription and try again.'),
  insufficientCredits: (balance: number, required: number) =>
    new TrellisError('payment_required', 'insufficient_credits', `This needs ${required} credits; the team has ${balance} (short by ${required - balance}).`, {
      extra: { balance, required, shortfall: required - balance },
    }),
  reservationNotFound: () => new TrellisError('not_found', 'RESERVATION_NOT_FOUND', 'No such credit reservation in a team of yours.'),
  reservationClosed: (status: string) =>
    new TrellisError('conflict', 'RESERVATION_CLOSED', `The reservation is already ${status}; it can be settled or released once.`),
  settleExceedsReservation: (used: number, amount: number) =>
    new TrellisError('bad_request', 'SETTLE_EXCEEDS_RESERVATION', `Cannot settle ${used} credits on a reservation of ${amount}.`),
  orderNotFound: () => new TrellisError('not_found', 'ORDER_NOT_FOUND', 'No such order in a team of yours.'),
  orderNotPending: (status: string) => new TrellisError('conflict', 'ORDER_NOT_PENDING', `The order is ${status}; only a pending order can be paid.`),
  paymentProviderError: (cause: unknown) =>
    new TrellisError('unavailable', 'PAYMENT_PROVIDER_ERROR', 'The payment provider could not create a checkout.', { status: 502, cause }),
};

/** `failHandler` of a team's billing record read: the team was deleted meanwhile (400 NO_TEAM). */
export const teamGone = (): Error => billingErrors.noTeam('The team no longer exists.');
