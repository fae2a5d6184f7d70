import { dateTime, jsonObject, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { Schedule, ScheduleFire } from './entities/schedule.entity.js';
import type { WebhookDelivery, WebhookSubscription } from './entities/subscription.entity.js';
import type { WebhookTrigger } from './entities/webhook-trigger.entity.js';
import { missedPolicies } from './entities/schedule.entity.js';
import { deliveryStatuses, webhookEvents } from './entities/subscription.entity.js';
import { webhookAnswers, webhookVerifications } from './entities/webhook-trigger.entity.js';

/** The trigger responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
const failure = nullable(Type.Object({ code: Type.String(), message: Type.String() }));

export const webhookTriggerSchema = Type.Object({
  id: uuid(),
  blockId: uuid(),
  name: Type.String(),
  verification: stringEnum(webhookVerifications),
  // Input name to a path in the delivery: `Type.Record` would publish `patternProperties`, not the `additionalProperties` published here.
  mapping: Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: Type.String() }),
  answer: stringEnum(webhookAnswers),
  waitSeconds: Type.Integer(),
  version: nullable(Type.String()),
  enabled: Type.Boolean(),
  path: Type.String({ description: 'Where senders POST, under the server\'s base URL: `/hooks/<id>`.' }),
  secret: Type.Optional(Type.String({ description: 'Only when created or rotated: the `whsec_` signing secret (standard) or the bearer secret.' })),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type WebhookTriggerView = Static<typeof webhookTriggerSchema>;
export const webhookTriggerPageSchema = pageSchema(webhookTriggerSchema);

export const toWebhookTriggerView = (trigger: WebhookTrigger, secret?: string | null): WebhookTriggerView => ({
  id: trigger.id,
  blockId: trigger.block.id,
  name: trigger.name,
  verification: trigger.verification,
  mapping: trigger.mapping,
  answer: trigger.answer,
  waitSeconds: trigger.waitSeconds,
  version: trigger.version,
  enabled: trigger.enabled,
  path: `/hooks/${trigger.id}`,
  ...(secret ? { secret } : {}),
  createdAt: trigger.createdAt.toISOString(),
  updatedAt: trigger.updatedAt.toISOString(),
});

export const webhookAcceptedSchema = Type.Object({
  runId: uuid(),
  documentId: uuid(),
  status: Type.String({ description: '`accepted`: the run is queued or going on; follow it with GET /documents/{documentId}/runs/{runId}.' }),
  duplicate: Type.Boolean({ description: 'true when an earlier delivery with this webhook-id started the run.' }),
});
export type WebhookAcceptedView = Static<typeof webhookAcceptedSchema>;

export const scheduleSchema = Type.Object({
  id: uuid(),
  blockId: uuid(),
  name: Type.String(),
  cron: Type.String(),
  timezone: Type.String(),
  inputs: jsonObject({ additionalProperties: true }),
  version: nullable(Type.String()),
  missed: stringEnum(missedPolicies),
  paused: Type.Boolean(),
  nextDueAt: nullable(dateTime(), { description: 'The next due time (null while paused).' }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type ScheduleView = Static<typeof scheduleSchema>;
export const schedulePageSchema = pageSchema(scheduleSchema);

export const toScheduleView = (schedule: Schedule): ScheduleView => ({
  id: schedule.id,
  blockId: schedule.block.id,
  name: schedule.name,
  cron: schedule.cron,
  timezone: schedule.timezone,
  inputs: schedule.inputs,
  version: schedule.version,
  missed: schedule.missed,
  paused: schedule.paused,
  nextDueAt: schedule.paused || !schedule.nextDueAt ? null : schedule.nextDueAt.toISOString(),
  createdAt: schedule.createdAt.toISOString(),
  updatedAt: schedule.updatedAt.toISOString(),
});

export const scheduleFireSchema = Type.Object({ dueAt: dateTime(), runId: nullable(uuid()), error: failure });
export type ScheduleFireView = Static<typeof scheduleFireSchema>;
export const scheduleFirePageSchema = pageSchema(scheduleFireSchema);

export const toScheduleFireView = (fire: ScheduleFire): ScheduleFireView => ({ dueAt: fire.dueAt.toISOString(), runId: fire.runId, error: fire.error });

export const subscriptionSchema = Type.Object({
  id: uuid(),
  ownerId: uuid(),
  teamId: nullable(uuid()),
  url: Type.String(),
  events: Type.Array(stringEnum(webhookEvents)),
  description: Type.String(),
  enabled: Type.Boolean(),
  secret: Type.Optional(Type.String({ description: 'Only when created or rotated: the `whsec_` signing secret.' })),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type SubscriptionView = Static<typeof subscriptionSchema>;
export const subscriptionPageSchema = pageSchema(subscriptionSchema);

export const toSubscriptionView = (subscription: WebhookSubscription, secret?: string | null): SubscriptionView => ({
  id: subscription.id,
  ownerId: subscription.owner.id,
  teamId: subscription.team?.id ?? null,
  url: subscription.url,
  events: subscription.events,
  description: subscription.description,
  enabled: subscription.enabled,
  ...(secret ? { secret } : {}),
  createdAt: subscription.createdAt.toISOString(),
  updatedAt: subscription.updatedAt.toISOString(),
});

const attemptSchema = Type.Object({
  at: dateTime(),
  durationMs: Type.Integer(),
  statusCode: nullable(Type.Integer(), { description: 'The receiver\'s status (null when no answer came).' }),
  error: nullable(Type.String(), {
    description: 'Why the attempt failed, in the server\'s words: `answered <status>`, `timeout`, `destination_refused`, `connection_failed`.',
  }),
});

export const deliverySchema = Type.Object({
  id: uuid(),
  subscriptionId: uuid(),
  messageId: Type.String({ description: 'The `webhook-id` sent (the same on every attempt).' }),
  event: stringEnum(webhookEvents),
  status: stringEnum(deliveryStatuses),
  attempts: Type.Integer({ description: 'Attempts of the current round (a redelivery starts a new round).' }),
  nextAttemptAt: nullable(dateTime()),
  lastStatusCode: nullable(Type.Integer()),
  log: Type.Array(attemptSchema, { description: 'Every attempt, oldest first.' }),
  payload: jsonObject({ additionalProperties: true, description: 'The JSON sent: `{ type, timestamp, data }`.' }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type DeliveryView = Static<typeof deliverySchema>;
export const deliveryPageSchema = pageSchema(deliverySchema);

export const toDeliveryView = (delivery: WebhookDelivery): DeliveryView => ({
  id: delivery.id,
  subscriptionId: delivery.subscription.id,
  messageId: delivery.messageId,
  event: delivery.event,
  status: delivery.status,
  attempts: delivery.attempts,
  nextAttemptAt: delivery.nextAttemptAt ? delivery.nextAttemptAt.toISOString() : null,
  lastStatusCode: delivery.lastStatusCode,
  log: delivery.log,
  payload: JSON.parse(delivery.body) as Record<string, unknown>,
  createdAt: delivery.createdAt.toISOString(),
  updatedAt: delivery.updatedAt.toISOString(),
});
