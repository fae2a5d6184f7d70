import { EntitySchema } from '@mikro-orm/core';
import { Team, User } from '../../identity/index.js';

/** Events an outbound webhook subscription may ask for (docs/webhooks.md). */
export const webhookEvents = ['run.completed', 'run.failed', 'run.waiting', 'budget.reached', 'conversation.turn_finished'] as const;
export type WebhookEvent = (typeof webhookEvents)[number];

/**
 * An outbound webhook: events of the owner's runs and conversations (or, with a team, of the
 * team's) are POSTed to `url`, signed with the Standard Webhooks scheme.
 */
export class WebhookSubscription {
  id!: string;
  owner!: User;
  team!: Team | null;
  url!: string;
  events!: WebhookEvent[];
  description!: string;
  /** `whsec_...`, sealed with the server's secret box. */
  secret!: string;
  enabled!: boolean;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookSubscriptionSchema = new EntitySchema<WebhookSubscription>({
  class: WebhookSubscription,
  tableName: 'webhook_subscriptions',
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade', nullable: true, index: true },
    url: { type: 'string', length: 2048 },
    events: { type: 'json' },
    description: { type: 'string', length: 500 },
    secret: { type: 'text' },
    enabled: { type: 'boolean' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

export const deliveryStatuses = ['pending', 'delivering', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

/** One attempt of a delivery: when, how long, the status code (null when no response came) or why not. */
export interface DeliveryAttempt {
  at: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

/**
 * One event to deliver to one subscription, kept until delivered or out of attempts (and after,
 * as the delivery log). Its message id is derived from the event, so an event noticed twice is
 * stored once, and receivers deduplicate by `webhook-id`.
 */
export class WebhookDelivery {
  id!: string;
  subscription!: WebhookSubscription;
  messageId!: string;
  event!: WebhookEvent;
  /** The JSON text POSTed (what is signed). */
  body!: string;
  status!: DeliveryStatus;
  attempts!: number;
  nextAttemptAt!: Date | null;
  lockedUntil!: Date | null;
  lastStatusCode!: number | null;
  log!: DeliveryAttempt[];
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookDeliverySchema = new EntitySchema<WebhookDelivery>({
  class: WebhookDelivery,
  tableName: 'webhook_deliveries',
  uniques: [{ properties: ['subscription', 'messageId'] }],
  indexes: [{ properties: ['status', 'nextAttemptAt'] }, { properties: ['subscription', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    subscription: { kind: 'm:1', entity: () => WebhookSubscription, deleteRule: 'cascade' },
    messageId: { type: 'string', length: 64 },
    event: { type: 'string', length: 64 },
    body: { type: 'text' },
    status: { type: 'string', length: 16 },
    attempts: { type: 'integer' },
    nextAttemptAt: { type: 'datetime', nullable: true },
    lockedUntil: { type: 'datetime', nullable: true },
    lastStatusCode: { type: 'integer', nullable: true },
    log: { type: 'json' },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
