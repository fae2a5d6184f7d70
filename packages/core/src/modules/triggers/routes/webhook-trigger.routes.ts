import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { pageOf, paging, PageQuery } from '../../../kernel/http/dto/paging.js';
import { BidParams, blockAuth } from '../../blocks/index.js';
import { runResultSchema } from '../../runs/index.js';
import { BidTriggerParams, CreateWebhookTriggerBody, HookParams, UpdateWebhookTriggerBody } from '../dto/triggers.dto.js';
import { WebhookTriggerService } from '../services/webhook-triggers.service.js';
import type { TriggersConfig } from '../triggers.config.js';
import { toWebhookTriggerView, webhookAcceptedSchema, webhookTriggerPageSchema, webhookTriggerSchema } from '../views.js';

const tags = ['Webhooks'];
const missing = 'No such block, it is in the trash, or no access to it (block_not_found); no such trigger of it (webhook_trigger_not_found)';
const noWrite = "No write permission in the block's project (block_access_denied)";
const badMapping = 'A mapping source is not one of body, body.<path>, form.<field>, query.<name>, header.<name> (invalid_webhook_mapping); bad body (validation_failed)';

/** CRUD of a deployment's inbound webhooks (the write permission in the block's project), and the inbound endpoint. */
export function webhookTriggerRoutes(config: TriggersConfig): RouteDefinition[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/block/:bid/webhooks',
      summary: "List a deployed block's inbound webhooks",
      tags,
      auth: blockAuth,
      params: BidParams,
      query: PageQuery,
      response: { schema: webhookTriggerPageSchema },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(WebhookTriggerService).list(ctx.em, ctx.requirePrincipal(), ctx.params.bid, p);
        return pageOf(items.map((t) => toWebhookTriggerView(t)), total, p);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/block/:bid/webhooks',
      summary: 'Add an inbound webhook to a deployed block',
      description: 'Senders POST to `path` (`/hooks/<id>`); each verified delivery starts a run of the deployment (docs/webhooks.md). The secret is answered this once.',
      tags,
      auth: blockAuth,
      params: BidParams,
      body: CreateWebhookTriggerBody,
      noStore: true,
      response: { status: 201, schema: webhookTriggerSchema },
      errors: { 403: noWrite, 404: `${missing}; never deployed (deployment_not_found)`, 422: badMapping },
      async handler(ctx) {
        const { trigger, secret } = await ctx.get(WebhookTriggerService).create(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.body);
        return Reply.json(toWebhookTriggerView(trigger, secret), 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/block/:bid/webhooks/:triggerId',
      summary: 'One inbound webhook',
      tags,
      auth: blockAuth,
      params: BidTriggerParams,
      response: { schema: webhookTriggerSchema },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        return toWebhookTriggerView(await ctx.get(WebhookTriggerService).get(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.params.triggerId));
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/block/:bid/webhooks/:triggerId',
      summary: 'Change an inbound webhook (or rotate its secret)',
      tags,
      auth: blockAuth,
      params: BidTriggerParams,
      body: UpdateWebhookTriggerBody,
      noStore: true,
      response: { schema: webhookTriggerSchema },
      errors: { 403: noWrite, 404: missing, 422: badMapping },
      async handler(ctx) {
        const { trigger, secret } = await ctx.get(WebhookTriggerService).update(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.params.triggerId, ctx.body);
        return toWebhookTriggerView(trigger, secret);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/block/:bid/webhooks/:triggerId',
      summary: 'Delete an inbound webhook',
      tags,
      auth: blockAuth,
      params: BidTriggerParams,
      response: { status: 204 },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        await ctx.get(WebhookTriggerService).remove(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.params.triggerId);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/hooks/:triggerId',
      summary: 'Deliver an inbound webhook (starts a run of the deployment)',
      description:
        'Any body: JSON, a form, or text (its inputs come from the trigger\'s mapping). Verified with the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) or `Authorization: Bearer <secret>`, as the trigger says. A repeated `webhook-id` starts no second run: it answers the first delivery\'s run (`duplicate: true`). docs/webhooks.md.',
      tags,
      auth: 'none',
      params: HookParams,
      maxBodyBytes: config.webhooks.maxBodyBytes,
      response: {
        status: 202,
        schema: webhookAcceptedSchema,
        alternatives: [{ status: 200, description: 'Trigger in `wait` mode: the run ended (or waits for an answer) within its waitSeconds: its result.', schema: runResultSchema }],
      },
      errors: {
        400: 'The JSON body is malformed (webhook_body_unreadable); the inputs fail the deployment\'s definitions (invalid_inputs); no team to bill (no_team_associated)',
        401: 'Standard Webhooks headers missing (webhook_signature_missing), timestamp outside the tolerance window (webhook_timestamp_out_of_range), no matching signature (webhook_signature_invalid), or a wrong bearer secret (webhook_secret_invalid)',
        402: 'The project\'s team has too few credits (insufficient_credits)',
        404: 'No such trigger, or disabled (webhook_trigger_not_found); the block is gone (block_not_found) or has no such version (block_version_not_found, deployment_not_found)',
        409: 'A delivery with the same webhook-id is still starting its run (webhook_delivery_in_progress, Retry-After)',
        413: 'Body above triggers.webhooks.maxBodyBytes (payload_too_large)',
        500: 'The credit balance could not be checked (balance_check_failed)',
      },
      async handler(ctx) {
        const outcome = await ctx.get(WebhookTriggerService).receive(ctx.em, ctx.params.triggerId, { headers: ctx.headers, query: ctx.query as Record<string, string | string[]>, rawBody: ctx.rawBody }, ctx.signal);
        if (outcome.result) return Reply.json(outcome.result, 200);
        return { runId: outcome.runId, documentId: outcome.documentId, status: 'accepted', duplicate: outcome.duplicate };
      },
    }),
  ];
}
