export { billingModule } from './billing.module.js';
export { billingConfigSchema, checkBillingConfig, defaultPlans, defaultCreditPacks, type BillingConfig, type PlanConfig, type CreditPackConfig } from './billing.config.js';
export { billingConfigServiceIdentifier } from './tokens.js';
export { billingPeriods, isBillingPeriod, addMonths, periodContaining, type BillingPeriod } from './periods.js';
export type { PlanChangeReason } from './hooks.js';
// Entities
export { Subscription, SubscriptionSchema, subscriptionStatuses, type SubscriptionStatus } from './entities/subscription.entity.js';
export { CreditBalance, CreditBalanceSchema } from './entities/credit-balance.entity.js';
export { CreditLedgerEntry, CreditLedgerEntrySchema, ledgerKinds, type LedgerKind } from './entities/credit-ledger-entry.entity.js';
export { CreditReservation, CreditReservationSchema, reservationStatuses, type ReservationStatus } from './entities/credit-reservation.entity.js';
export { PaymentOrder, PaymentOrderSchema, orderKinds, orderStatuses, type OrderKind, type OrderStatus } from './entities/payment-order.entity.js';
export { Coupon, CouponSchema } from './entities/coupon.entity.js';
export { PaymentEventRecord, PaymentEventSchema } from './entities/payment-event.entity.js';
// Services: CreditService is the API runs use (reserve / settle / release).
export { CreditService, type ReserveInput, type BalanceSnapshot, type CreditHold } from './services/credit.service.js';
export { CreditWriteIncomplete, giveBackPgCtes, giveBackPgParams, grantHoldPgCtes, grantHoldPgParams } from './queries.js';
export { closePlan, type ClosePlan } from './services/credit-close.js';
export { SubscriptionService, type ChangePlanInput, type ChangePlanResult, type Overview } from './services/subscription.service.js';
export { BillingAccountService } from './services/billing-account.service.js';
export { PlanCatalog, type Plan, type CreditPack } from './services/plan-catalog.js';
export { OrderService, type PaymentGuidance, type PlacedOrder, type PaidVia, type PaidOrder, type WebhookResult } from './services/order.service.js';
export { CouponService, discountFor, normaliseCouponCode, type CreateCouponInput } from './services/coupon.service.js';
export { SubscriptionLifecycle, type PlanChange, type RenewalResult } from './services/subscription-lifecycle.js';
export { CreditLedger, type Movement, type CreditPeriod } from './services/credit-ledger.js';
export { BillingJobs, type RenewalRun, type ExpiryRun } from './services/billing-jobs.js';
export { ManualPaymentProvider } from './providers/manual-payment-provider.js';
export { billingErrors } from './errors.js';
export { formatAmount, currencyDigits } from './money.js';
export { toSubscriptionView, toBalanceView, toOrderView, toCouponView, toReservationView, toLedgerEntryView } from './views.js';
