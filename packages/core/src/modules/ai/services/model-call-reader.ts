import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { pageOf, type Page, type Paging } from '../../../kernel/http/dto/paging.js';
import { dateTime, jsonObject, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../../kernel/http/response-schema.js';
import type { AiUsage } from '../../../ports/ai-provider.js';
import type { AiConfig } from '../ai.config.js';
import { ModelCall, modelCallStatuses } from '../entities/model-call.entity.js';
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
export function toModelCallView(call: ModelCall): ModelCallView {
  return {
    id: call.id,
    operation: call.operation as ModelCallView['operation'], // written by ModelCallRecorder: `chat` or `embeddings`
    modelId: call.modelId,
    provider: call.provider,
    model: call.model,
    runId: call.runId,
    attempt: call.attempt,
    blockPath: call.blockPath,
    conversationId: call.conversationId,
    turnId: call.turnId,
    callIndex: call.callIndex,
    // Messages are stored as the JSON objects that were sent.
    messages: (call.request?.messages as Array<Record<string, unknown>> | undefined) ?? null,
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

/** The API view of a record, declared once: its JSON Schema (OpenAPI) and TypeScript type. */
export const modelCallSchema = Type.Object({
  id: uuid(),
  operation: stringEnum(['chat', 'embeddings']),
  modelId: Type.String({ description: 'The AI model record (`/ai/models/{id}`).' }),
  provider: nullable(Type.String(), { description: 'The model\'s service (`openai`, `anthropic`, ...).' }),
  model: nullable(Type.String(), { description: 'The provider\'s model name from the model\'s conf.' }),
  runId: nullable(Type.String()),
  attempt: nullable(Type.Integer(), { description: 'The run attempt that made the call.' }),
  blockPath: nullable(Type.String(), { description: 'The block that made the call (its id).' }),
  conversationId: nullable(Type.String()),
  turnId: nullable(Type.String()),
  callIndex: Type.Integer({ description: 'The call\'s place in its block or turn, from 1.' }),
  messages: nullable(Type.Array(jsonObject()), { description: 'The messages sent; null when message bodies are not recorded (`ai.records.messageBodies`).' }),
  tools: nullable(Type.Array(jsonObject()), { description: 'The tool definitions offered; null when message bodies are not recorded.' }),
  messageCount: Type.Integer(),
  toolNames: Type.Array(Type.String()),
  toolCalls: Type.Array(Type.Object({ toolCallId: Type.String(), toolName: Type.String(), input: Type.Unknown() })),
  usage: Type.Object(
    { inputTokens: Type.Integer(), outputTokens: Type.Integer(), cachedTokens: nullable(Type.Integer()) },
    { description: 'Tokens as the provider reported them.' },
  ),
  credits: Type.Integer({ description: 'The call\'s price in credits.' }),
  finishReason: nullable(Type.String()),
  status: stringEnum(modelCallStatuses),
  error: nullable(Type.Object({ code: Type.Optional(Type.String()), message: Type.Optional(Type.String()) })),
  retries: Type.Integer({ description: 'Earlier attempts of the same call (made by attempts of the run that were lost).' }),
  firstTokenMs: nullable(Type.Integer(), { description: 'Milliseconds to the first text or tool call.' }),
  durationMs: Type.Integer(),
  startedAt: dateTime(),
  createdAt: dateTime(),
});
export type ModelCallView = Static<typeof modelCallSchema>;

export const modelCallPageSchema = pageSchema(modelCallSchema);
