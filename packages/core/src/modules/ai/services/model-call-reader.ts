import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { pageOf, type Page, type Paging } from '../../../kernel/http/dto/paging.js';
import type { AiUsage } from '../../../ports/ai-provider.js';
import type { AiConfig } from '../ai.config.js';
import { ModelCall } from '../entities/model-call.entity.js';
import { aiConfigServiceIdentifier } from '../tokens.js';

/** Model call records: pages for a run or a turn (access is checked by the caller), usage per hold, retention. */
@injectable()
export class ModelCallReader {
  constructor(@inject(aiConfigServiceIdentifier) private readonly config: AiConfig) {}

  /** A run's calls, oldest first. */
  async forRun(em: EntityManager, runId: string, p: Paging): Promise<Page<ModelCall>> {
    const [items, total] = await Promise.all([
      em.find(ModelCall, { runId }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: p.size, offset: p.offset }),
      em.count(ModelCall, { runId }),
    ]);
    return pageOf(items, total, p);
  }

  /** A conversation turn's calls, oldest first. */
  async forTurn(em: EntityManager, conversationId: string, turnId: string, p: Paging): Promise<Page<ModelCall>> {
    const where = { conversationId, turnId };
    const [items, total] = await Promise.all([em.find(ModelCall, where, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: p.size, offset: p.offset }), em.count(ModelCall, where)]);
    return pageOf(items, total, p);
  }

  /** The usage recorded against a credit hold, summed per AI model (every attempt's calls, each once). */
  async usageOfHold(em: EntityManager, reservationId: string): Promise<Map<string, AiUsage>> {
    const rows = await em.find(ModelCall, { reservationId, operation: 'chat' }, { fields: ['modelId', 'inputTokens', 'outputTokens'] });
    const usage = new Map<string, AiUsage>();
    for (const row of rows) {
      const entry = usage.get(row.modelId) ?? { inputTokens: 0, outputTokens: 0 };
      entry.inputTokens += row.inputTokens;
      entry.outputTokens += row.outputTokens;
      usage.set(row.modelId, entry);
    }
    return usage;
  }

  /** Deletes records past `ai.records.retentionDays`; answers how many. */
  async prune(em: EntityManager, now = new Date()): Promise<number> {
    const days = this.config.records.retentionDays;
    if (!days) return 0;
    return em.nativeDelete(ModelCall, { createdAt: { $lt: new Date(now.getTime() - days * 86_400_000) } });
  }
}

/** The API view of a record. */
export function toModelCallView(call: ModelCall) {
  return {
    id: call.id,
    operation: call.operation,
    modelId: call.modelId,
    provider: call.provider,
    model: call.model,
    runId: call.runId,
    attempt: call.attempt,
    blockPath: call.blockPath,
    conversationId: call.conversationId,
    turnId: call.turnId,
    callIndex: call.callIndex,
    messages: call.request?.messages ?? null,
    tools: call.request?.tools ?? null,
    messageCount: call.messageCount,
    toolNames: call.toolNames,
    toolCalls: call.toolCalls ?? [],
    usage: { inputTokens: call.inputTokens, outputTokens: call.outputTokens, cachedTokens: call.cachedTokens },
    credits: call.credits,
    finishReason: call.finishReason,
    status: call.status,
    error: call.error,
    retries: call.retries,
    firstTokenMs: call.firstTokenMs,
    durationMs: call.durationMs,
    startedAt: call.startedAt.toISOString(),
    createdAt: call.createdAt.toISOString(),
  };
}

const nullable = (type: string) => ({ type: [type, 'null'] });

/** The OpenAPI schema of a record. */
export const modelCallSchema = {
  type: 'object',
  required: ['id', 'operation', 'modelId', 'provider', 'model', 'runId', 'attempt', 'blockPath', 'conversationId', 'turnId', 'callIndex', 'messages', 'tools', 'messageCount', 'toolNames', 'toolCalls', 'usage', 'credits', 'finishReason', 'status', 'error', 'retries', 'firstTokenMs', 'durationMs', 'startedAt', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    operation: { type: 'string', enum: ['chat', 'embeddings'] },
    modelId: { type: 'string', description: 'The AI model record (`/ai/models/{id}`).' },
    provider: { ...nullable('string'), description: 'The model\'s service (`openai`, `anthropic`, ...).' },
    model: { ...nullable('string'), description: 'The provider\'s model name from the model\'s conf.' },
    runId: nullable('string'),
    attempt: { ...nullable('integer'), description: 'The run attempt that made the call.' },
    blockPath: { ...nullable('string'), description: 'The block that made the call (its id).' },
    conversationId: nullable('string'),
    turnId: nullable('string'),
    callIndex: { type: 'integer', description: 'The call\'s place in its block or turn, from 1.' },
    messages: { type: ['array', 'null'], items: { type: 'object' }, description: 'The messages sent; null when message bodies are not recorded (`ai.records.messageBodies`).' },
    tools: { type: ['array', 'null'], items: { type: 'object' }, description: 'The tool definitions offered; null when message bodies are not recorded.' },
    messageCount: { type: 'integer' },
    toolNames: { type: 'array', items: { type: 'string' } },
    toolCalls: { type: 'array', items: { type: 'object', required: ['toolCallId', 'toolName', 'input'], properties: { toolCallId: { type: 'string' }, toolName: { type: 'string' }, input: {} } } },
    usage: {
      type: 'object',
      required: ['inputTokens', 'outputTokens', 'cachedTokens'],
      properties: { inputTokens: { type: 'integer' }, outputTokens: { type: 'integer' }, cachedTokens: nullable('integer') },
      description: 'Tokens as the provider reported them.',
    },
    credits: { type: 'integer', description: 'The call\'s price in credits.' },
    finishReason: nullable('string'),
    status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
    error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
    retries: { type: 'integer', description: 'Earlier attempts of the same call (made by attempts of the run that were lost).' },
    firstTokenMs: { ...nullable('integer'), description: 'Milliseconds to the first text or tool call.' },
    durationMs: { type: 'integer' },
    startedAt: { type: 'string', format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const modelCallPageSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: modelCallSchema }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
} as const;
