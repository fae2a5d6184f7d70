import { EntitySchema } from '@mikro-orm/core';

export const modelCallStatuses = ['completed', 'failed', 'cancelled'] as const;
export type ModelCallStatus = (typeof modelCallStatuses)[number];

/** What a model was sent, when message bodies are recorded (`ai.records.messageBodies`). */
export interface ModelCallRequest {
  messages: unknown[];
  tools: Array<{ name: string; description?: string; parameters?: unknown }>;
}

/**
 * One call to an AI provider: a chat call made by a run's LLM block or a conversation turn, or an
 * embeddings call. Written once, when the call ends (it is the record that charges the call's
 * usage to a run's credit hold: see docs/observability.md). `callKey` makes the write happen once
 * per (run, attempt, block path, call index) or (conversation, turn, call index).
 */
export class ModelCall {
  id!: string;
  /** `chat` or `embeddings`. */
  operation!: string;
  /** The AI model record (`/ai/models`) and what its conf names. */
  modelId!: string;
  provider!: string | null;
  model!: string | null;
  runId!: string | null;
  attempt!: number | null;
  blockPath!: string | null;
  conversationId!: string | null;
  turnId!: string | null;
  /** The order of this call in its block (or turn), from 1. */
  callIndex!: number;
  callKey!: string | null;
  /** The credit hold the call is charged to (a run's reservation). */
  reservationId!: string | null;
  teamId!: string | null;
  userId!: string | null;
  /** Messages sent, tools offered; null when message bodies are not recorded. */
  request!: ModelCallRequest | null;
  messageCount!: number;
  toolNames!: string[];
  /** The tool calls the model answered with. */
  toolCalls!: Array<{ toolCallId: string; toolName: string; input: unknown }> | null;
  inputTokens!: number;
  outputTokens!: number;
  /** Cached input tokens, when the provider reports them. */
  cachedTokens!: number | null;
  /** The call's price in credits (docs/observability.md says how a run is charged). */
  credits!: number;
  finishReason!: string | null;
  status!: ModelCallStatus;
  error!: { code: string; message: string } | null;
  /** Earlier attempts of the same call (a lost worker's attempt of the same block and index). */
  retries!: number;
  firstTokenMs!: number | null;
  durationMs!: number;
  startedAt!: Date;
  createdAt!: Date;
}

export const ModelCallSchema = new EntitySchema<ModelCall>({
  class: ModelCall,
  tableName: 'ai_model_calls',
  indexes: [{ properties: ['runId', 'createdAt'] }, { properties: ['turnId', 'createdAt'] }, { properties: ['createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    operation: { type: 'string', length: 32 },
    modelId: { type: 'string', length: 64 },
    provider: { type: 'string', length: 64, nullable: true },
    model: { type: 'string', length: 200, nullable: true },
    runId: { type: 'uuid', nullable: true },
    attempt: { type: 'integer', nullable: true },
    blockPath: { type: 'string', length: 500, nullable: true },
    conversationId: { type: 'uuid', nullable: true },
    turnId: { type: 'string', length: 64, nullable: true },
    callIndex: { type: 'integer' },
    callKey: { type: 'string', length: 700, nullable: true, unique: true },
    reservationId: { type: 'uuid', nullable: true, index: true },
    teamId: { type: 'uuid', nullable: true },
    userId: { type: 'uuid', nullable: true },
    request: { type: 'json', nullable: true },
    messageCount: { type: 'integer' },
    toolNames: { type: 'json' },
    toolCalls: { type: 'json', nullable: true },
    inputTokens: { type: 'integer' },
    outputTokens: { type: 'integer' },
    cachedTokens: { type: 'integer', nullable: true },
    credits: { type: 'integer' },
    finishReason: { type: 'string', length: 32, nullable: true },
    status: { type: 'string', length: 16 },
    error: { type: 'json', nullable: true },
    retries: { type: 'integer' },
    firstTokenMs: { type: 'integer', nullable: true },
    durationMs: { type: 'integer' },
    startedAt: { type: 'datetime' },
    createdAt: { type: 'datetime' },
  },
});
