import type { AiToolCall, AiUsage } from '../../ports/ai-provider.js';
import type { ChatCompletionView } from './schemas.js';

/** What a bot or a deployed block answers, part by part, whether streamed or not. */
export type CompletionPart =
  | { type: 'text'; delta: string }
  | ({ type: 'tool-call' } & AiToolCall)
  | { type: 'finish'; reason: 'stop' | 'length' | 'tool_calls' | 'content_filter'; usage: AiUsage };

/** A completion whose checks passed and whose credits are held: its parts follow. */
export interface PreparedCompletion {
  parts: AsyncIterable<CompletionPart>;
}

export interface CompletionRequest {
  /** The `model` as the client sent it (echoed in every answer). */
  model: string;
  id: string;
  created: number;
}

const usageOf = (usage: AiUsage) => ({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens });

const openAiCall = (call: AiToolCall, index?: number) => ({
  ...(index !== undefined ? { index } : {}),
  id: call.toolCallId,
  type: 'function' as const,
  function: { name: call.toolName, arguments: JSON.stringify(call.input ?? {}) },
});

/** The whole answer as one `chat.completion` object. */
export async function collectCompletion(request: CompletionRequest, prepared: PreparedCompletion): Promise<ChatCompletionView> {
  let text = '';
  const calls: AiToolCall[] = [];
  let finish: Extract<CompletionPart, { type: 'finish' }> = { type: 'finish', reason: 'stop', usage: { inputTokens: 0, outputTokens: 0 } };
  for await (const part of prepared.parts) {
    if (part.type === 'text') text += part.delta;
    else if (part.type === 'tool-call') calls.push(part);
    else finish = part;
  }
  return {
    id: request.id,
    object: 'chat.completion',
    created: request.created,
    model: request.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: calls.length && !text ? null : text, ...(calls.length ? { tool_calls: calls.map((c) => openAiCall(c)) } : {}) },
        finish_reason: finish.reason,
      },
    ],
    usage: usageOf(finish.usage),
  };
}

/**
 * The answer as OpenAI's stream: `chat.completion.chunk` objects (the role first, then content
 * deltas and tool calls, then the finish reason), with `includeUsage` one more chunk with the
 * usage and no choices, then `[DONE]`. A failure after the stream began is sent as a
 * `data: {"error": ...}` event, which the OpenAI SDKs raise, and the stream ends without `[DONE]`.
 */
export async function* streamCompletion(
  request: CompletionRequest,
  prepared: PreparedCompletion,
  includeUsage: boolean,
  errorBody: (error: unknown) => Record<string, unknown>,
): AsyncGenerator<string> {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: request.id, object: 'chat.completion.chunk', created: request.created, model: request.model, choices, ...extra })}\n\n`;
  yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  let calls = 0;
  try {
    for await (const part of prepared.parts) {
      if (part.type === 'text') {
        if (part.delta) yield chunk([{ index: 0, delta: { content: part.delta }, finish_reason: null }]);
      } else if (part.type === 'tool-call') {
        yield chunk([{ index: 0, delta: { tool_calls: [openAiCall(part, calls++)] }, finish_reason: null }]);
      } else {
        yield chunk([{ index: 0, delta: {}, finish_reason: part.reason }]);
        if (includeUsage) yield chunk([], { usage: usageOf(part.usage) });
      }
    }
  } catch (error) {
    yield `data: ${JSON.stringify(errorBody(error))}\n\n`;
    return;
  }
  yield 'data: [DONE]\n\n';
}
