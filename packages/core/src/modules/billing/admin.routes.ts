import { IdParams } from '../../kernel/http/dto/id-params.js';
import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { AdminCouponQuery, AdminOrderQuery, CreateCouponBody } from './dto/admin.dto.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { couponSchema, markPaidSchema, orderSchema } from './schemas.js';
import { CouponService } from './services/coupon.service.js';
import { OrderService } from './services/order.service.js';
import { toCouponView, toOrderView } from './views.js';

const tags = ['Administration: orders and coupons'];
const auth = ['jwt', 'api_key'] as const;
const permission = 'administrator' as const;
const adminOnly = 'Needs the administrator permission (permission_denied)';

export const adminBillingRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/orders',
    summary: 'Payment orders, newest first',
    tags,
    auth,
    permission,
    query: AdminOrderQuery,
    response: { schema: pageSchema(orderSchema) },
    errors: { 403: adminOnly },
    async handler(ctx) {
      const page = await ctx.get(OrderService).list(ctx.em, ctx.query);
      return { ...page, items: page.items.map(toOrderView) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/orders/:id',
    summary: 'One payment order',
    tags,
    auth,
    permission,
    params: IdParams,
    response: { schema: orderSchema },
    errors: { 403: adminOnly, 404: 'No such order (order_not_found)' },
    async handler(ctx) {
      return toOrderView(await ctx.get(OrderService).get(ctx.em, ctx.params.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/orders/:id/confirm',
    summary: 'Confirm that a manual-payment order was paid',
    description:
      'For orders of the `manual` payment provider: marks the order paid and applies it (the plan starts, or the credits are added). Pending and expired orders can be confirmed; confirming a paid order again changes nothing (`alreadyPaid: true`).',
    tags,
    auth,
    permission,
    params: IdParams,
    response: { schema: markPaidSchema },
    errors: {
      403: adminOnly,
      404: 'No such order (order_not_found)',
      409: 'The order is paid through a payment provider (order_not_manual), or was cancelled (order_not_payable)',
    },
    async handler(ctx) {
      const paid = await ctx.get(OrderService).confirmManually(ctx.em, ctx.params.id, { kind: 'admin', userId: ctx.requirePrincipal().userId });
      return { order: toOrderView(paid.order), alreadyPaid: paid.alreadyPaid };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/coupons',
    summary: 'Coupons, newest first',
    tags,
    auth,
    permission,
    query: AdminCouponQuery,
    response: { schema: pageSchema(couponSchema) },
    errors: { 403: adminOnly },
    async handler(ctx) {
      const page = await ctx.get(CouponService).list(ctx.em, ctx.query);
      return { ...page, items: page.items.map(toCouponView) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/coupons',
    summary: 'Create a coupon',
    tags,
    auth,
    permission,
    body: CreateCouponBody,
    response: { status: 201, schema: couponSchema },
    errors: { 403: adminOnly, 409: 'The code is taken (coupon_code_taken)', 422: 'Not exactly one of percentOff and amountOff, or expiresAt in the past (invalid_coupon); other values (validation_failed)' },
    async handler(ctx) {
      const coupon = await ctx.get(CouponService).create(ctx.em, ctx.body, ctx.requirePrincipal().userId);
      return Reply.json(toCouponView(coupon), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/coupons/:id',
    summary: 'One coupon',
    tags,
    auth,
    permission,
    params: IdParams,
    response: { schema: couponSchema },
    errors: { 403: adminOnly, 404: 'No such coupon (coupon_not_found)' },
    async handler(ctx) {
      return toCouponView(await ctx.get(CouponService).get(ctx.em, ctx.params.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/coupons/:id/disable',
    summary: 'Disable a coupon',
    description: 'New orders can no longer use it; orders already placed keep their discount. Idempotent.',
    tags,
    auth,
    permission,
    params: IdParams,
    response: { schema: couponSchema },
    errors: { 403: adminOnly, 404: 'No such coupon (coupon_not_found)' },
    async handler(ctx) {
      return toCouponView(await ctx.get(CouponService).disable(ctx.em, ctx.params.id));
    },
  }),
];
