import { EntitySchema } from '@mikro-orm/core';
import { Block } from '../../blocks/index.js';
import { User } from '../../identity/index.js';

/** How an inbound webhook proves it comes from the sender: a Standard Webhooks signature, or the secret as a bearer token. */
export const webhookVerifications = ['standard', 'bearer'] as const;
export type WebhookVerification = (typeof webhookVerifications)[number];

/** `accepted`: 202 with the run id at once; `wait`: the run's result when it ends within `waitSeconds`, else 202. */
export const webhookAnswers = ['accepted', 'wait'] as const;
export type WebhookAnswer = (typeof webhookAnswers)[number];

/** Where one input of the run comes from: `body.a.b`, `query.x`, `header.x-name`, `form.field`, or `body` for the whole body. */
export type WebhookMapping = Record<string, string>;

/**
 * An inbound webhook of a deployed block: `POST /hooks/:id` with a verified request starts a run of
 * the deployment (the pinned `version`, else the latest), with inputs mapped from the request.
 */
export class WebhookTrigger {
  id!: string;
  block!: Block;
  createdBy!: User;
  name!: string;
  verification!: WebhookVerification;
  /** The secret, sealed with the server's secret box (`whsec_...` for `standard`). */
  secret!: string;
  mapping!: WebhookMapping;
  answer!: WebhookAnswer;
  waitSeconds!: number;
  version!: string | null;
  enabled!: boolean;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WebhookTriggerSchema = new EntitySchema<WebhookTrigger>({
  class: WebhookTrigger,
  tableName: 'webhook_triggers',
  properties: {
    id: { type: 'uuid', primary: true },
    block: { kind: 'm:1', entity: () => Block, deleteRule: 'cascade', index: true },
    createdBy: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200 },
    verification: { type: 'string', length: 16 },
    secret: { type: 'text' },
    mapping: { type: 'json' },
    answer: { type: 'string', length: 16 },
    waitSeconds: { type: 'integer' },
    version: { type: 'string', length: 32, nullable: true },
    enabled: { type: 'boolean' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

/** A delivery an inbound webhook accepted, by its `webhook-id`: a repeat starts no second run. */
export class WebhookReceipt {
  id!: string;
  trigger!: WebhookTrigger;
  messageId!: string;
  /** The run it started (null while it is being started). */
  runId!: string | null;
  createdAt!: Date;
}

export const WebhookReceiptSchema = new EntitySchema<WebhookReceipt>({
  class: WebhookReceipt,
  tableName: 'webhook_receipts',
  uniques: [{ properties: ['trigger', 'messageId'] }],
  indexes: [{ properties: ['createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    trigger: { kind: 'm:1', entity: () => WebhookTrigger, deleteRule: 'cascade' },
    messageId: { type: 'string', length: 255 },
    runId: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime' },
  },
});
