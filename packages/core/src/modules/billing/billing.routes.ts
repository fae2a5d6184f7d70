import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { configServiceIdentifier } from '../../kernel/tokens.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import type { BillingConfig } from './billing.config.js';
import { ChangePlanBody, BillingIdParams, ProviderParams, PurchaseCreditsBody, SubscriptionQuery, TeamBody, TeamPageQuery } from './dto/billing.dto.js';
import { billingErrors } from './errors.js';
import {
  catalogSchema,
  changePlanSchema,
  envelope,
  orderSchema,
  overviewSchema,
  paymentSchema,
  purchaseSchema,
  successOnly,
  webhookResultSchema,
  type PlanChangeView,
} from './schemas.js';
import { BillingAccountService } from './services/billing-account.service.js';
import { OrderService } from './services/order.service.js';
import { PlanCatalog } from './services/plan-catalog.js';
import { SubscriptionService, type ChangePlanResult } from './services/subscription.service.js';
import { toBalanceView, toOrderView, toPackView, toPlanView, toSubscriptionView } from './views.js';

const tags = ['Billing'];
/** Every /billing route answers errors as `{ success: false, error, message }`, and bad input as 400 BAD_REQUEST. */
export const billingRouteDefaults = { tags, errorFormat: 'billing', validationError: { status: 400, code: 'BAD_REQUEST' } } as const;
const noTeam = 'Caller in no team, or not in the given team (NO_TEAM); a required field missing (BAD_REQUEST)';
const notManager = 'Not owner or admin of the team (FORBIDDEN)';

const ok = <T>(data: T) => ({ success: true as const, data });

function changePlanView(result: ChangePlanResult): PlanChangeView {
  switch (result.action) {
    case 'downgrade_scheduled':
      return { ...result, effectiveAt: result.effectiveAt.toISOString() };
    case 'payment_required':
      return { ...result, order: toOrderView(result.order) };
    case 'upgraded':
      return { ...result, effectiveAt: result.effectiveAt.toISOString(), order: toOrderView(result.order) };
    default:
      return result;
  }
}

const customerEmail = (ctx: RequestContext) => ctx.principal?.user.email;

export const billingRoutes: RouteDefinition[] = [
  defineRoute({
    ...billingRouteDefaults,
    method: 'GET',
    path: '/billing/plans',
    summary: 'Plans and credit packs on offer',
    auth: 'none',
    response: { schema: catalogSchema },
    handler(ctx) {
      const catalog = ctx.get(PlanCatalog);
      const config = ctx.get(configServiceIdentifier)['billing'] as BillingConfig;
      return ok({ currency: catalog.currency, fallbackPlan: config.fallbackPlan, plans: catalog.list().map(toPlanView), creditPacks: catalog.packList().map(toPackView) });
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'GET',
    path: '/billing/subscription',
    summary: "A team's subscription and credit balance",
    description: "Needs team membership. Without `teamId`, the caller's first team (the personal team). A team gets its billing records (fallback plan, first monthly credits) the first time billing sees it.",
    auth: ['jwt'],
    query: SubscriptionQuery,
    response: { schema: overviewSchema },
    errors: { 400: noTeam },
    async handler(ctx) {
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, ctx.requirePrincipal().userId, ctx.query.teamId, 'member');
      const { subscription, balance } = await ctx.get(SubscriptionService).overview(ctx.em, teamId);
      return ok({ subscription: toSubscriptionView(subscription), balance: toBalanceView(balance) });
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/subscription/change-plan',
    summary: 'Change the plan of a team',
    description:
      'Downgrade (lower rank, or yearly to monthly): scheduled for the end of the current period (`downgrade_scheduled`). Upgrade: a payment order is created and returned with payment guidance (`payment_required`); the plan changes at once when the order is paid. The current plan and period cancel a scheduled change (`scheduled_change_canceled`). Needs the team role owner or admin.',
    auth: ['jwt'],
    body: ChangePlanBody,
    response: { schema: changePlanSchema },
    errors: {
      400: `${noTeam}; unknown plan (INVALID_PLAN) or billing period (INVALID_BILLING_PERIOD); coupon unusable (INVALID_COUPON, COUPON_EXHAUSTED)`,
      403: notManager,
      409: 'The plan changed while the request ran (PLAN_CHANGED)',
      502: 'The payment provider failed (PAYMENT_PROVIDER_ERROR)',
    },
    async handler(ctx) {
      const principal = ctx.requirePrincipal();
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, principal.userId, ctx.body.teamId, 'manage');
      const result = await ctx.get(SubscriptionService).changePlan(ctx.em, {
        userId: principal.userId,
        customerEmail: customerEmail(ctx),
        teamId,
        targetPlanCode: ctx.body.targetPlanCode,
        billingPeriod: ctx.body.billingPeriod,
        couponCode: ctx.body.couponCode,
      });
      return ok(changePlanView(result));
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/subscription/cancel-renewal',
    summary: 'Stop renewal at the end of the current period',
    description: 'The team keeps its plan until `currentPeriodEnd`, then falls back to the fallback plan. Idempotent. Needs the team role owner or admin.',
    auth: ['jwt'],
    body: TeamBody,
    response: { schema: successOnly },
    errors: { 400: `${noTeam}; the team is on the fallback plan (NOTHING_TO_CANCEL)`, 403: notManager },
    async handler(ctx) {
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, ctx.requirePrincipal().userId, ctx.body.teamId, 'manage');
      await ctx.get(SubscriptionService).cancelRenewal(ctx.em, teamId);
      return { success: true as const };
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/subscription/resume-renewal',
    summary: 'Resume a cancelled renewal',
    description: 'Undoes cancel-renewal while the period runs. Idempotent. Needs the team role owner or admin.',
    auth: ['jwt'],
    body: TeamBody,
    response: { schema: successOnly },
    errors: { 400: noTeam, 403: notManager },
    async handler(ctx) {
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, ctx.requirePrincipal().userId, ctx.body.teamId, 'manage');
      await ctx.get(SubscriptionService).resumeRenewal(ctx.em, teamId);
      return { success: true as const };
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/credits/purchase',
    summary: 'Buy a credit pack',
    description: 'Creates a payment order and returns it with payment guidance; the credits are added (as purchased credits, which never expire) when it is paid. Needs the team role owner or admin.',
    auth: ['jwt'],
    body: PurchaseCreditsBody,
    response: { schema: purchaseSchema },
    errors: { 400: `${noTeam}; unknown pack (INVALID_CREDIT_PACK); coupon unusable (INVALID_COUPON, COUPON_EXHAUSTED)`, 403: notManager, 502: 'The payment provider failed (PAYMENT_PROVIDER_ERROR)' },
    async handler(ctx) {
      const principal = ctx.requirePrincipal();
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, principal.userId, ctx.body.teamId, 'manage');
      const catalog = ctx.get(PlanCatalog);
      const pack = catalog.findPack(ctx.body.packCode);
      if (!pack) throw billingErrors.invalidPack(ctx.body.packCode, catalog.packList().map((p) => p.code));
      await ctx.get(BillingAccountService).ensure(ctx.em, teamId);
      const placed = await ctx.get(OrderService).placeCreditsOrder(ctx.em, {
        teamId,
        userId: principal.userId,
        customerEmail: customerEmail(ctx),
        pack,
        couponCode: ctx.body.couponCode,
      });
      return ok({ order: toOrderView(placed.order), payment: placed.payment });
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'GET',
    path: '/billing/orders',
    summary: "A team's payment orders, newest first",
    description: 'Needs team membership. Pending orders carry their payment URL or instructions.',
    auth: ['jwt', 'api_key'],
    query: TeamPageQuery,
    response: { schema: envelope(pageSchema(orderSchema)) },
    errors: { 400: noTeam },
    async handler(ctx) {
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, ctx.requirePrincipal().userId, ctx.query.teamId, 'member');
      const { teamId: _ignored, ...paging } = ctx.query;
      const page = await ctx.get(OrderService).list(ctx.em, { ...paging, teamId });
      return ok({ ...page, items: page.items.map(toOrderView) });
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/orders/:id/checkout',
    summary: 'A new way to pay a pending order',
    description: 'For a pending order whose checkout expired or failed (renewal orders live for the grace period; a Stripe session at most 24 hours). Needs the team role owner or admin.',
    auth: ['jwt'],
    params: BillingIdParams,
    response: { schema: envelope(paymentSchema) },
    errors: { 403: notManager, 404: 'No such order in a team of yours (ORDER_NOT_FOUND)', 409: 'The order is not pending (ORDER_NOT_PENDING)', 502: 'The payment provider failed (PAYMENT_PROVIDER_ERROR)' },
    async handler(ctx) {
      const principal = ctx.requirePrincipal();
      const orders = ctx.get(OrderService);
      const order = await orders.get(ctx.em, ctx.params.id).catch(() => null);
      if (!order) throw billingErrors.orderNotFound();
      await ctx
        .get(BillingAccountService)
        .resolveTeam(ctx.em, principal.userId, order.team.id, 'manage')
        .catch((error: { code?: string }) => {
          throw error.code === 'NO_TEAM' ? billingErrors.orderNotFound() : error;
        });
      return ok(await orders.checkout(ctx.em, order.id, customerEmail(ctx)));
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/webhooks/:provider',
    summary: 'Payment provider notifications',
    description:
      'For the payment provider in use (`stripe`): the signature is verified over the raw body, and each event is applied once (processed event ids are stored). Answers 200 for duplicates too, so the provider stops retrying.',
    auth: 'none',
    params: ProviderParams,
    response: { schema: webhookResultSchema },
    errors: { 400: 'Bad or missing signature (INVALID_SIGNATURE)', 404: 'No webhook for this provider (UNKNOWN_PAYMENT_PROVIDER)' },
    async handler(ctx) {
      return ctx.get(OrderService).handleWebhook(ctx.em, ctx.params.provider, { headers: ctx.headers, rawBody: ctx.rawBody });
    },
  }),
];
