import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { pageOf, paging, PageQuery } from '../../../kernel/http/dto/paging.js';
import { CreateSubscriptionBody, DeliveryParams, SubscriptionParams, UpdateSubscriptionBody } from '../dto/triggers.dto.js';
import { OutboundWebhookService } from '../services/outbound.service.js';
import { deliveryPageSchema, deliverySchema, subscriptionPageSchema, subscriptionSchema, toDeliveryView, toSubscriptionView } from '../views.js';

const auth = ['jwt', 'api_key', 'agent_token', 'oauth'] as const;
const scopes = { read: ['webhooks:read', 'webhooks:write'], write: ['webhooks:write'] };
const tags = ['Webhooks'];
const missing = 'No such subscription of yours (webhook_subscription_not_found)';
const badUrl = 'url is not http(s), carries credentials, or is an address the network guard refuses (invalid_webhook_url); bad body (validation_failed)';

/** Outbound webhook subscriptions, their delivery log and redelivery. */
export function subscriptionRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/webhooks/subscriptions',
      summary: 'Your outbound webhook subscriptions',
      tags,
      auth,
      scopes: scopes.read,
      query: PageQuery,
      response: { schema: subscriptionPageSchema },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(OutboundWebhookService).list(ctx.em, ctx.requirePrincipal(), p);
        return pageOf(items.map((s) => toSubscriptionView(s)), total, p);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/webhooks/subscriptions',
      summary: 'Subscribe a URL to events (signed with the Standard Webhooks scheme)',
      description: 'The signing secret (`whsec_...`) is answered this once. docs/webhooks.md lists the events and their payloads.',
      tags,
      auth,
      scopes: scopes.write,
      body: CreateSubscriptionBody,
      noStore: true,
      response: { status: 201, schema: subscriptionSchema },
      errors: { 403: 'A team subscription needs the team role owner or admin (team_role_required)', 404: 'No such team of yours (team_not_found)', 422: badUrl },
      async handler(ctx) {
        const { subscription, secret } = await ctx.get(OutboundWebhookService).create(ctx.em, ctx.requirePrincipal(), ctx.body);
        return Reply.json(toSubscriptionView(subscription, secret), 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/webhooks/subscriptions/:subscriptionId',
      summary: 'One subscription',
      tags,
      auth,
      scopes: scopes.read,
      params: SubscriptionParams,
      response: { schema: subscriptionSchema },
      errors: { 404: missing },
      async handler(ctx) {
        return toSubscriptionView(await ctx.get(OutboundWebhookService).get(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId));
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/webhooks/subscriptions/:subscriptionId',
      summary: 'Change a subscription (or rotate its secret)',
      tags,
      auth,
      scopes: scopes.write,
      params: SubscriptionParams,
      body: UpdateSubscriptionBody,
      noStore: true,
      response: { schema: subscriptionSchema },
      errors: { 404: missing, 422: badUrl },
      async handler(ctx) {
        const { subscription, secret } = await ctx.get(OutboundWebhookService).update(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId, ctx.body);
        return toSubscriptionView(subscription, secret);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/webhooks/subscriptions/:subscriptionId',
      summary: 'Delete a subscription and its delivery log',
      tags,
      auth,
      scopes: scopes.write,
      params: SubscriptionParams,
      response: { status: 204 },
      errors: { 404: missing },
      async handler(ctx) {
        await ctx.get(OutboundWebhookService).remove(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/webhooks/subscriptions/:subscriptionId/deliveries',
      summary: 'The delivery log of a subscription, newest first',
      tags,
      auth,
      scopes: scopes.read,
      params: SubscriptionParams,
      query: PageQuery,
      response: { schema: deliveryPageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(OutboundWebhookService).deliveries(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId, p);
        return pageOf(items.map(toDeliveryView), total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/webhooks/subscriptions/:subscriptionId/deliveries/:deliveryId',
      summary: 'One delivery with its attempts',
      tags,
      auth,
      scopes: scopes.read,
      params: DeliveryParams,
      response: { schema: deliverySchema },
      errors: { 404: `${missing}; no such delivery of it (webhook_delivery_not_found)` },
      async handler(ctx) {
        return toDeliveryView(await ctx.get(OutboundWebhookService).delivery(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId, ctx.params.deliveryId));
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/webhooks/subscriptions/:subscriptionId/deliveries/:deliveryId/redeliver',
      summary: 'Send a delivery again (same webhook-id and body, a new round of attempts)',
      tags,
      auth,
      scopes: scopes.write,
      params: DeliveryParams,
      response: { status: 202, schema: deliverySchema },
      errors: { 404: `${missing}; no such delivery of it (webhook_delivery_not_found)` },
      async handler(ctx) {
        return Reply.json(toDeliveryView(await ctx.get(OutboundWebhookService).redeliver(ctx.em, ctx.requirePrincipal(), ctx.params.subscriptionId, ctx.params.deliveryId)), 202);
      },
    }),
  ];
}
