import { ContainerModule } from 'inversify';
import { defineModule, type JobDefinition } from '../../kernel/module.js';
import { paymentProviderServiceIdentifier } from '../../ports/payment-provider.js';
import { adminBillingRoutes } from './admin.routes.js';
import { billingConfigSchema, checkBillingConfig, type BillingConfig } from './billing.config.js';
import { billingRoutes } from './billing.routes.js';
import { creditRoutes } from './credit.routes.js';
import { CouponSchema } from './entities/coupon.entity.js';
import { CreditBalanceSchema } from './entities/credit-balance.entity.js';
import { CreditLedgerEntrySchema } from './entities/credit-ledger-entry.entity.js';
import { CreditReservationSchema } from './entities/credit-reservation.entity.js';
import { PaymentEventSchema } from './entities/payment-event.entity.js';
import { PaymentOrderSchema } from './entities/payment-order.entity.js';
import { SubscriptionSchema } from './entities/subscription.entity.js';
import './hooks.js';
import { migrations } from './migrations/index.js';
import { ManualPaymentProvider } from './providers/manual-payment-provider.js';
import { BillingAccountService } from './services/billing-account.service.js';
import { BillingJobs } from './services/billing-jobs.js';
import { CouponService } from './services/coupon.service.js';
import { CreditLedger } from './services/credit-ledger.js';
import { CreditService } from './services/credit.service.js';
import { OrderService } from './services/order.service.js';
import { PlanCatalog } from './services/plan-catalog.js';
import { SubscriptionLifecycle } from './services/subscription-lifecycle.js';
import { SubscriptionService } from './services/subscription.service.js';
import { billingConfigServiceIdentifier } from './tokens.js';

const jobInterval = (config: Record<string, unknown>) => (config['billing'] as BillingConfig).jobIntervalMs;

const jobs: JobDefinition[] = [
  {
    name: 'billing.renewal',
    intervalMs: jobInterval,
    async run(ctx) {
      const run = await ctx.get(BillingJobs).renew(ctx.em, ctx.signal);
      if (run.renewed || run.creditMonths || run.endedUnpaid) ctx.log.info(run, 'billing: periods renewed');
    },
  },
  {
    name: 'billing.expiry',
    intervalMs: jobInterval,
    async run(ctx) {
      const run = await ctx.get(BillingJobs).expire(ctx.em, ctx.signal);
      if (run.orders || run.reservations) ctx.log.info(run, 'billing: expired orders and reservations');
    },
  },
];

/**
 * Billing: plans from configuration, a subscription and a credit balance per team backed by an
 * append-only ledger, plan changes with payment orders through the PaymentProvider port, coupons,
 * credit reservations for runs, and the renewal and expiry jobs.
 */
export const billingModule = defineModule({
  name: 'billing',
  dependsOn: ['identity'],
  config: billingConfigSchema,
  entities: [SubscriptionSchema, CreditBalanceSchema, CreditLedgerEntrySchema, CreditReservationSchema, PaymentOrderSchema, CouponSchema, PaymentEventSchema],
  migrations,
  container: ({ section }) => {
    const config = checkBillingConfig(section as BillingConfig);
    return new ContainerModule(({ bind }) => {
      bind(billingConfigServiceIdentifier).toConstantValue(config);
      bind(paymentProviderServiceIdentifier).toConstantValue(new ManualPaymentProvider());
      bind(PlanCatalog).toSelf();
      bind(CreditLedger).toSelf();
      bind(BillingAccountService).toSelf();
      bind(CouponService).toSelf();
      bind(SubscriptionLifecycle).toSelf();
      bind(OrderService).toSelf();
      bind(CreditService).toSelf();
      bind(SubscriptionService).toSelf();
      bind(BillingJobs).toSelf();
    });
  },
  routes: [...billingRoutes, ...creditRoutes, ...adminBillingRoutes],
  jobs,
  onStart({ get, log }) {
    const provider = get(paymentProviderServiceIdentifier);
    if (provider.manualConfirmation) {
      log.warn(
        `⚠ billing uses the "${provider.id}" payment provider: no money is collected, and an administrator confirms each paid order by hand (POST /admin/orders/{id}/confirm or \`trellis billing confirm-order <id>\`). Fine for development and invoicing by hand; bind a real provider such as @trellis/payments-stripe to take card payments.`,
      );
    }
  },
});
