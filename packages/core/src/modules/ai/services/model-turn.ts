import type { ModelCallFrame } from './model-call-scope.js';
import { isTrellisError } from '../../../kernel/errors.js';
import type { AiChatRequest, AiGateway, AiMessage, AiToolCall, AiToolDefinition, AiUsage } from '../../../ports/ai-provider.js';

/** A credit hold for one model call: reserved before the call, closed from its usage after. */
export interface ModelCallCredits<Hold = unknown> {
  reserve(step: number): Promise<Hold>;
  /** Charges `usage` (priced, at most the hold) and releases the rest; answers the credits charged. */
  settle(hold: Hold, usage: AiUsage): Promise<number>;
  /** Releases the whole hold: the call failed before it could be priced. */
  release(hold: Hold, reason: string): Promise<void>;
}

/** What one model call produced. */
export interface ModelStep {
  step: number;
  text: string;
  calls: AiToolCall[];
  usage: AiUsage;
  /** Credits charged for the call (0 without credits). */
  credits: number;
  /** The messages the model was sent. */
  sent: number;
}

/**
 * Where a model turn's output goes. A method answering a promise holds the turn until it settles
 * (back-pressure: the provider stream is not read further meanwhile).
 */
export interface ModelTurnSink {
  /** Before each model call (after its credits were held). */
  stepStart?(step: number): void | Promise<void>;
  text(delta: string): void | Promise<void> | undefined;
  /** After each model call, before its tool calls run. */
  stepEnd?(outcome: ModelStep): void | Promise<void>;
  toolStart?(call: AiToolCall): void | Promise<void>;
  /** `result` is what the model is told: the tool's answer, or `{ error, message }` when it failed. */
  toolResult?(call: AiToolCall, result: unknown, failed: boolean, key?: string): void | Promise<void>;
}

/**
 * Exactly-once tool calls (see `callToolOnce`): the idempotency key of the turn's `index`-th tool
 * call (0-based, counted over the whole turn), and the result an earlier attempt recorded under a key.
 */
export interface ToolCallEffects {
  key(index: number): string;
  recall(key: string): Promise<{ result: unknown } | undefined>;
}

export interface ModelTurnInput {
  gateway: AiGateway;
  /** Who its model calls are recorded for (a run's block, a conversation turn). */
  scope?: ModelCallFrame;
  /** Whose models and tools the turn uses. */
  userId: string;
  modelId: string;
  /** The conversation so far; the turn appends the model's answers and the tool results. */
  messages: AiMessage[];
  toolIds: readonly string[];
  temperature?: number;
  signal: AbortSignal;
  /** The caller's conversation or run id, for providers that keep their own thread. */
  threadId?: string;
  /** Model calls at most; a turn still asking for tools after the last one ends `step_limit`. */
  maxSteps: number;
  /** Whether the turn runs the model's tool calls itself (false: it ends `waiting_tool`). */
  runTools: boolean;
  credits?: ModelCallCredits<any>;
  /** Structured output: the JSON answer asked for (the vendor's JSON mode where it has one). */
  responseFormat?: AiChatRequest['responseFormat'];
  /** Idempotency keys for the tool calls, and answers from an earlier attempt's log. */
  effects?: ToolCallEffects;
  sink: ModelTurnSink;
}

export interface ModelTurnOutcome {
  status: 'completed' | 'waiting_tool' | 'step_limit';
  /** The text of the last model call. */
  text: string;
  steps: ModelStep[];
  tools: AiToolDefinition[];
}

/** What a failed tool tells the model: its error code, and its message when it may be shown. */
export function toolFailure(error: unknown): { error: string; message: string } {
  if (isTrellisError(error)) return { error: error.code, message: error.exposed ? error.message : 'The tool failed.' };
  return { error: 'tool_failed', message: 'The tool failed.' };
}

/** A rough token count of text (four characters a token), to price a call its provider never finished. */
const tokensOf = (text: string) => Math.ceil(text.length / 4);

/** What a cut call is charged: the input it was sent and the output it produced, estimated from their length. */
export function estimatedUsage(messages: readonly AiMessage[], text: string): AiUsage {
  return { inputTokens: tokensOf(messages.map((m) => m.content).join('')), outputTokens: tokensOf(text) };
}

/**
 * One model turn: calls the model, streams its text to the sink, runs the tools it calls and
 * feeds their results back, until it answers without tool calls, waits for the caller's tool
 * answers, or reaches `maxSteps`. Each call holds credits first (when `credits` is given) and is
 * charged from the usage the provider reports; a call cut by `signal` is charged from an estimate
 * of what it consumed, one that failed otherwise is released. Errors (the provider's, a stop)
 * reach the caller after the hold was closed; a failed tool does not end the turn.
 */
export async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnOutcome> {
  const { gateway, sink, signal, messages, credits } = input;
  const tools = input.toolIds.length ? await gateway.toolDefinitions({ userId: input.userId, toolIds: input.toolIds }) : [];
  const steps: ModelStep[] = [];
  let callIndex = 0;
  for (let step = 1; ; step++) {
    signal.throwIfAborted();
    const hold = credits ? await credits.reserve(step) : undefined;
    let text = '';
    const calls: AiToolCall[] = [];
    let usage: AiUsage = { inputTokens: 0, outputTokens: 0 };
    const sent = messages.slice();
    let called = false;
    try {
      await sink.stepStart?.(step);
      // A stop that came while the step started (a budget check reads the database) ends it
      // before the provider is called (a call given an aborted signal may never look at it), and
      // nothing was used: the hold is released.
      signal.throwIfAborted();
      called = true;
      const stream = gateway.chat({
        userId: input.userId,
        modelId: input.modelId,
        request: { messages: sent, tools: tools.length ? tools : undefined, temperature: input.temperature, signal, threadId: input.threadId, responseFormat: input.responseFormat },
        scope: input.scope,
      });
      for await (const part of stream) {
        if (part.type === 'text-delta') {
          text += part.delta;
          const behind = sink.text(part.delta);
          if (behind) await behind;
        } else if (part.type === 'tool-call') {
          calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
        } else if (part.type === 'finish') {
          usage = part.usage;
        }
      }
    } catch (error) {
      if (credits && hold !== undefined) {
        if (signal.aborted && called) await credits.settle(hold, estimatedUsage(sent, text)).catch(() => undefined);
        else await credits.release(hold, called ? 'the model call failed' : 'stopped before the model call').catch(() => undefined);
      }
      throw error;
    }
    const charged = credits && hold !== undefined ? await credits.settle(hold, usage) : 0;
    const outcome: ModelStep = { step, text, calls, usage, credits: charged, sent: sent.length };
    steps.push(outcome);
    await sink.stepEnd?.(outcome);
    if (!calls.length) return { status: 'completed', text, steps, tools };
    if (!input.runTools) return { status: 'waiting_tool', text, steps, tools };
    messages.push({ role: 'assistant', content: text, toolCalls: calls });
    for (const call of calls) {
      await sink.toolStart?.(call);
      const { result, failed, key } = await callToolOnce(input, call, callIndex++);
      await sink.toolResult?.(call, result, failed, key);
      messages.push({ role: 'tool', toolCallId: call.toolCallId, toolName: call.toolName, content: typeof result === 'string' ? result : JSON.stringify(result ?? null) });
    }
    if (step >= input.maxSteps) return { status: 'step_limit', text, steps, tools };
  }
}

/**
 * One tool call of a turn, at most once per idempotency key: with `effects`, a result an earlier
 * attempt recorded under the call's key answers it without calling again; otherwise the tool is
 * called with the key (the `Idempotency-Key` of an http action, `_meta` of an MCP call). A failed
 * call answers `toolFailure(error)` and no key (a failure is not recorded, a later attempt calls again).
 */
export async function callToolOnce(input: Pick<ModelTurnInput, 'gateway' | 'userId' | 'toolIds' | 'signal' | 'effects'>, call: AiToolCall, index: number): Promise<{ result: unknown; failed: boolean; key?: string }> {
  const key = input.effects?.key(index);
  if (key !== undefined) {
    const recorded = await input.effects!.recall(key);
    if (recorded) return { result: recorded.result, failed: false, key };
  }
  try {
    const result = await input.gateway.callTool({ userId: input.userId, toolIds: input.toolIds, toolName: call.toolName, args: call.input, signal: input.signal, idempotencyKey: key, toolCallId: call.toolCallId });
    return { result, failed: false, key };
  } catch (error) {
    if (input.signal.aborted) throw error;
    return { result: toolFailure(error), failed: true };
  }
}
