import type { Schedule, ScheduleFire } from './entities/schedule.entity.js';
import type { WebhookDelivery, WebhookSubscription } from './entities/subscription.entity.js';
import type { WebhookTrigger } from './entities/webhook-trigger.entity.js';
import { missedPolicies } from './entities/schedule.entity.js';
import { deliveryStatuses, webhookEvents } from './entities/subscription.entity.js';
import { webhookAnswers, webhookVerifications } from './entities/webhook-trigger.entity.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const page = (items: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});

export const webhookTriggerSchema = {
  type: 'object',
  required: ['id', 'blockId', 'name', 'verification', 'mapping', 'answer', 'waitSeconds', 'version', 'enabled', 'path', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    blockId: uuid,
    name: { type: 'string' },
    verification: { type: 'string', enum: [...webhookVerifications] },
    mapping: { type: 'object', additionalProperties: { type: 'string' } },
    answer: { type: 'string', enum: [...webhookAnswers] },
    waitSeconds: { type: 'integer' },
    version: { type: ['string', 'null'] },
    enabled: { type: 'boolean' },
    path: { type: 'string', description: 'Where senders POST, under the server\'s base URL: `/hooks/<id>`.' },
    secret: { type: 'string', description: 'Only when created or rotated: the `whsec_` signing secret (standard) or the bearer secret.' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};
export const webhookTriggerPageSchema = page(webhookTriggerSchema);

export const toWebhookTriggerView = (trigger: WebhookTrigger, secret?: string | null) => ({
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

export const webhookAcceptedSchema = {
  type: 'object',
  required: ['runId', 'documentId', 'status', 'duplicate'],
  properties: {
    runId: uuid,
    documentId: uuid,
    status: { type: 'string', description: '`accepted`: the run is queued or going on; follow it with GET /documents/{documentId}/runs/{runId}.' },
    duplicate: { type: 'boolean', description: 'true when an earlier delivery with this webhook-id started the run.' },
  },
};

export const scheduleSchema = {
  type: 'object',
  required: ['id', 'blockId', 'name', 'cron', 'timezone', 'inputs', 'version', 'missed', 'paused', 'nextDueAt', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    blockId: uuid,
    name: { type: 'string' },
    cron: { type: 'string' },
    timezone: { type: 'string' },
    inputs: { type: 'object', additionalProperties: true },
    version: { type: ['string', 'null'] },
    missed: { type: 'string', enum: [...missedPolicies] },
    paused: { type: 'boolean' },
    nextDueAt: { ...nullableDateTime, description: 'The next due time (null while paused).' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};
export const schedulePageSchema = page(scheduleSchema);

export const toScheduleView = (schedule: Schedule) => ({
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

export const scheduleFireSchema = {
  type: 'object',
  required: ['dueAt', 'runId', 'error'],
  properties: {
    dueAt: dateTime,
    runId: { type: ['string', 'null'], format: 'uuid' },
    error: { type: ['object', 'null'], required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
};
export const scheduleFirePageSchema = page(scheduleFireSchema);

export const toScheduleFireView = (fire: ScheduleFire) => ({ dueAt: fire.dueAt.toISOString(), runId: fire.runId, error: fire.error });

export const subscriptionSchema = {
  type: 'object',
  required: ['id', 'ownerId', 'teamId', 'url', 'events', 'description', 'enabled', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    ownerId: uuid,
    teamId: { type: ['string', 'null'], format: 'uuid' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string', enum: [...webhookEvents] } },
    description: { type: 'string' },
    enabled: { type: 'boolean' },
    secret: { type: 'string', description: 'Only when created or rotated: the `whsec_` signing secret.' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};
export const subscriptionPageSchema = page(subscriptionSchema);

export const toSubscriptionView = (subscription: WebhookSubscription, secret?: string | null) => ({
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

const attemptSchema = {
  type: 'object',
  required: ['at', 'durationMs', 'statusCode', 'error'],
  properties: {
    at: dateTime,
    durationMs: { type: 'integer' },
    statusCode: { type: ['integer', 'null'], description: 'The receiver\'s status (null when no answer came).' },
    error: { type: ['string', 'null'], description: 'Why the attempt failed, in the server\'s words: `answered <status>`, `timeout`, `destination_refused`, `connection_failed`.' },
  },
};

export const deliverySchema = {
  type: 'object',
  required: ['id', 'subscriptionId', 'messageId', 'event', 'status', 'attempts', 'nextAttemptAt', 'lastStatusCode', 'log', 'payload', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    subscriptionId: uuid,
    messageId: { type: 'string', description: 'The `webhook-id` sent (the same on every attempt).' },
    event: { type: 'string', enum: [...webhookEvents] },
    status: { type: 'string', enum: [...deliveryStatuses] },
    attempts: { type: 'integer', description: 'Attempts of the current round (a redelivery starts a new round).' },
    nextAttemptAt: nullableDateTime,
    lastStatusCode: { type: ['integer', 'null'] },
    log: { type: 'array', items: attemptSchema, description: 'Every attempt, oldest first.' },
    payload: { type: 'object', additionalProperties: true, description: 'The JSON sent: `{ type, timestamp, data }`.' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};
export const deliveryPageSchema = page(deliverySchema);

export const toDeliveryView = (delivery: WebhookDelivery) => ({
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
