import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError } from '../../../kernel/errors.js';
import { metricsServiceIdentifier, type TrellisMetrics } from '../../../kernel/observability/metrics.js';
import { SpanKind, SpanStatusCode, tracer } from '../../../kernel/observability/tracing.js';
import { entityManagerServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import type { AiFinishReason, AiMessage, AiToolCall, AiToolDefinition, AiUsage } from '../../../ports/ai-provider.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import type { AiConfig } from '../ai.config.js';
import { ModelCall, type ModelCallStatus } from '../entities/model-call.entity.js';
import { aiConfigServiceIdentifier } from '../tokens.js';
import { nextModelCall, type ModelCallFrame, type ModelCallScope } from './model-call-scope.js';

/** The GenAI semantic conventions' finish reasons (`tool-calls` is `tool_calls` there). */
const finishReasonOf = (reason: AiFinishReason): string => (reason === 'tool-calls' ? 'tool_calls' : reason === 'content-filter' ? 'content_filter' : reason);

/** What the gateway knows of a model when a call starts. */
export interface ModelCallModel {
  modelId: string;
  provider: string | null;
  /** The provider's model name (`conf.model`), when the conf names one. */
  model: string | null;
  userId?: string | null;
}

/** One call being recorded: its span is open until `finish` or `fail`. */
export interface ModelCallHandle {
  /** The first text or tool call arrived. */
  firstToken(): void;
  finish(outcome: { toolCalls: AiToolCall[]; usage: AiUsage; finishReason: AiFinishReason | null; credits: number }): Promise<void>;
  fail(error: unknown, outcome: { toolCalls: AiToolCall[]; usage: AiUsage | null; credits: number; cancelled: boolean }): Promise<void>;
}

/**
 * Records AI provider calls: a `ModelCall` row per call (with the scope it was made in: the run
 * and block, or the conversation turn), one OpenTelemetry span per call following the GenAI
 * semantic conventions, and the token and credit counters. A failure to record is logged, never
 * passed to the caller (the model's answer stands).
 */
@injectable()
export class ModelCallRecorder {
  private readonly tokens;
  private readonly creditsCounter;
  private readonly calls;
  private readonly duration;

  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
    @inject(metricsServiceIdentifier) @optional() metrics?: TrellisMetrics,
  ) {
    this.tokens = metrics?.counter({ name: 'trellis_ai_tokens_total', help: 'Tokens the AI providers reported, by provider, model and direction (input, output).', labelNames: ['provider', 'model', 'direction'] });
    this.creditsCounter = metrics?.counter({ name: 'trellis_ai_credits_total', help: 'Credits AI provider calls were priced at, by provider and model.', labelNames: ['provider', 'model'] });
    this.calls = metrics?.counter({ name: 'trellis_ai_model_calls_total', help: 'AI provider calls, by operation, provider, model and status (completed, failed, cancelled).', labelNames: ['operation', 'provider', 'model', 'status'] });
    this.duration = metrics?.histogram({
      name: 'trellis_ai_model_call_duration_seconds',
      help: 'AI provider call durations, by operation, provider and model.',
      labelNames: ['operation', 'provider', 'model'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    });
  }

  /** Whether message bodies are kept (`ai.records.messageBodies`; `auto`: not in production). */
  get keepsBodies(): boolean {
    const setting = this.config.records.messageBodies;
    return setting === 'on' || (setting === 'auto' && process.env.NODE_ENV !== 'production');
  }

  /** Starts recording a chat call that is about to be made. */
  chat(model: ModelCallModel, request: { messages: readonly AiMessage[]; tools?: readonly AiToolDefinition[]; temperature?: number }, frame?: ModelCallFrame): ModelCallHandle {
    const started = Date.now();
    const call = nextModelCall(frame);
    const scope: ModelCallScope = call?.scope ?? {};
    const attributes: Record<string, string | number> = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model.model ?? model.modelId,
      'trellis.ai.model_id': model.modelId,
    };
    if (model.provider) {
      attributes['gen_ai.provider.name'] = model.provider;
      attributes['gen_ai.system'] = model.provider;
    }
    if (request.temperature !== undefined) attributes['gen_ai.request.temperature'] = request.temperature;
    if (scope.conversationId) attributes['gen_ai.conversation.id'] = scope.conversationId;
    if (scope.runId) attributes['trellis.run.id'] = scope.runId;
    if (scope.blockPath) attributes['trellis.block.path'] = scope.blockPath;
    const span = tracer().startSpan(`chat ${model.model ?? model.modelId}`, { kind: SpanKind.CLIENT, attributes });
    let firstTokenMs: number | null = null;
    const tools = request.tools ?? [];
    const base = {
      operation: 'chat',
      model,
      scope,
      callIndex: call?.callIndex ?? 1,
      started,
      request: this.keepsBodies ? { messages: request.messages.map((m) => ({ ...m })), tools: tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })) } : null,
      messageCount: request.messages.length,
      toolNames: tools.map((t) => t.name),
    };
    const end = async (status: ModelCallStatus, toolCalls: AiToolCall[], usage: AiUsage | null, credits: number, finishReason: string | null, error: { code: string; message: string } | null) => {
      const durationMs = Date.now() - started;
      if (usage) {
        span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
        span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
      }
      span.setAttribute('gen_ai.response.model', model.model ?? model.modelId);
      if (finishReason) span.setAttribute('gen_ai.response.finish_reasons', [finishReason]);
      span.setAttribute('trellis.credits', credits);
      if (error) {
        span.setAttribute('error.type', error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      }
      span.end();
      this.count('chat', model, status, usage, credits, durationMs);
      await this.write({ ...base, status, toolCalls, usage, credits, finishReason, error, firstTokenMs, durationMs });
    };
    return {
      firstToken: () => {
        if (firstTokenMs === null) firstTokenMs = Date.now() - started;
      },
      finish: (outcome) => end('completed', outcome.toolCalls, outcome.usage, outcome.credits, outcome.finishReason && finishReasonOf(outcome.finishReason), null),
      fail: (error, outcome) => end(outcome.cancelled ? 'cancelled' : 'failed', outcome.toolCalls, outcome.usage, outcome.credits, outcome.cancelled ? null : 'error', errorOf(error)),
    };
  }

  /** Records an embeddings call that ended (`usage` null when it failed). */
  async embeddings(model: ModelCallModel, texts: number, started: number, outcome: { usage: { inputTokens: number } | null; credits: number; error?: unknown }, frame?: ModelCallFrame): Promise<void> {
    const call = nextModelCall(frame);
    const durationMs = Date.now() - started;
    const status: ModelCallStatus = outcome.error ? 'failed' : 'completed';
    const usage = outcome.usage ? { inputTokens: outcome.usage.inputTokens, outputTokens: 0 } : null;
    const span = tracer().startSpan(`embeddings ${model.model ?? model.modelId}`, {
      kind: SpanKind.CLIENT,
      startTime: started,
      attributes: { 'gen_ai.operation.name': 'embeddings', 'gen_ai.request.model': model.model ?? model.modelId, ...(model.provider ? { 'gen_ai.provider.name': model.provider, 'gen_ai.system': model.provider } : {}) },
    });
    if (usage) span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
    const error = outcome.error ? errorOf(outcome.error) : null;
    if (error) {
      span.setAttribute('error.type', error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    span.end();
    this.count('embeddings', model, status, usage, outcome.credits, durationMs);
    await this.write({
      operation: 'embeddings',
      model,
      scope: call?.scope ?? {},
      callIndex: call?.callIndex ?? 1,
      started,
      request: null,
      messageCount: texts,
      toolNames: [],
      status,
      toolCalls: [],
      usage,
      credits: outcome.credits,
      finishReason: null,
      error,
      firstTokenMs: null,
      durationMs,
    });
  }

  private count(operation: string, model: ModelCallModel, status: ModelCallStatus, usage: AiUsage | null, credits: number, durationMs: number): void {
    const provider = model.provider ?? 'unknown';
    const name = model.model ?? model.modelId;
    this.calls?.inc({ operation, provider, model: name, status });
    this.duration?.observe({ operation, provider, model: name }, durationMs / 1000);
    if (usage) {
      this.tokens?.inc({ provider, model: name, direction: 'input' }, usage.inputTokens);
      this.tokens?.inc({ provider, model: name, direction: 'output' }, usage.outputTokens);
    }
    if (credits > 0) this.creditsCounter?.inc({ provider, model: name }, credits);
  }

  private async write(entry: {
    operation: string;
    model: ModelCallModel;
    scope: ModelCallScope;
    callIndex: number;
    started: number;
    request: ModelCall['request'];
    messageCount: number;
    toolNames: string[];
    status: ModelCallStatus;
    toolCalls: AiToolCall[];
    usage: AiUsage | null;
    credits: number;
    finishReason: string | null;
    error: { code: string; message: string } | null;
    firstTokenMs: number | null;
    durationMs: number;
  }): Promise<void> {
    if (!this.config.records.enabled) return;
    const { scope } = entry;
    const key = scope.runId
      ? `run:${scope.runId}:${scope.attempt ?? 0}:${scope.blockPath ?? ''}:${entry.callIndex}`
      : scope.turnId
        ? `turn:${scope.conversationId ?? ''}:${scope.turnId}:${entry.callIndex}`
        : null;
    try {
      const em = this.root.fork();
      // Earlier attempts of this call: a lost worker's attempt of the same block and index.
      const retries = scope.runId ? await em.count(ModelCall, { runId: scope.runId, blockPath: scope.blockPath ?? null, callIndex: entry.callIndex, attempt: { $lt: scope.attempt ?? 0 } }) : 0;
      const now = new Date();
      await em.insert(ModelCall, {
        id: this.ids.next(),
        operation: entry.operation,
        modelId: entry.model.modelId,
        provider: entry.model.provider,
        model: entry.model.model,
        runId: scope.runId ?? null,
        attempt: scope.attempt ?? null,
        blockPath: scope.blockPath ?? null,
        conversationId: scope.conversationId ?? null,
        turnId: scope.turnId ?? null,
        callIndex: entry.callIndex,
        callKey: key,
        reservationId: scope.reservationId ?? null,
        teamId: scope.teamId ?? null,
        userId: scope.userId ?? entry.model.userId ?? null,
        request: entry.request,
        messageCount: entry.messageCount,
        toolNames: entry.toolNames,
        toolCalls: entry.toolCalls.length ? entry.toolCalls.map((c) => ({ toolCallId: c.toolCallId, toolName: c.toolName, input: c.input })) : null,
        inputTokens: entry.usage?.inputTokens ?? 0,
        outputTokens: entry.usage?.outputTokens ?? 0,
        cachedTokens: null,
        credits: entry.credits,
        finishReason: entry.finishReason,
        status: entry.status,
        error: entry.error,
        retries,
        firstTokenMs: entry.firstTokenMs,
        durationMs: entry.durationMs,
        startedAt: new Date(entry.started),
        createdAt: now,
      } as ModelCall);
    } catch (error) {
      // The same call key written twice is the one write that counts: nothing to do.
      if ((error as { name?: string }).name === 'UniqueConstraintViolationException') return;
      this.log.warn({ err: error, runId: scope.runId, turnId: scope.turnId }, 'could not store a model call record');
    }
  }
}

function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof TrellisError) return { code: error.code, message: error.exposed ? error.message : 'The call failed.' };
  if ((error as { name?: string })?.name === 'AbortError') return { code: 'aborted', message: 'The call was stopped.' };
  return { code: 'ai_call_failed', message: 'The call failed.' };
}
