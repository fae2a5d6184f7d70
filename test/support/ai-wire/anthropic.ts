import type { IncomingMessage, ServerResponse } from 'node:http';
import { argumentFragments, eventFrame, isWireEmbeddings, isWireError, roughTokens, WireServerBase, type AiWireServer, type WireReply, type WireRequest, type WireTurn } from './common.js';

export interface AnthropicWireOptions {
  /** When set, requests without `x-api-key: <apiKey>` get Anthropic's 401 answer. */
  apiKey?: string;
  /** The answer when no scripted reply is queued. Default: echoes the last user message. */
  fallback?: (request: WireRequest) => WireReply;
  /**
   * Rate-limit headers sent with 429 answers besides `retry-after` (`anthropic-ratelimit-requests-reset`, ...),
   * as Anthropic does. Default none.
   */
  rateLimitHeaders?: Record<string, string>;
}

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const lastUserText = (body: any): string => {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const last = [...messages].reverse().find((message) => message.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return Array.isArray(last.content) ? last.content.map((part: any) => (part.type === 'text' ? part.text : '')).join('') : '';
};

/** The default answer: `You said: <last user message>`, in two deltas. */
export const anthropicEchoReply = (request: WireRequest): WireReply => ({ text: ['You said: ', lastUserText(request.body)] });

/**
 * A local server speaking Anthropic's Messages API (`POST /v1/messages`, streamed with
 * `message_start`, `content_block_*` (text and `tool_use` with `input_json_delta`),
 * `message_delta` with usage and `message_stop`, or one JSON message), scripted per request.
 * Errors use Anthropic's `{type: "error", error: {type, message}}` body.
 *
 * ```ts
 * const wire = await new AnthropicWireServer({ apiKey: 'sk-ant-test' }).start();
 * // conf: { model: 'claude-test', baseURL: wire.baseURL, apiKey: 'sk-ant-test' }
 * ```
 */
export class AnthropicWireServer extends WireServerBase<WireReply> implements AiWireServer {
  constructor(private readonly options: AnthropicWireOptions = {}) {
    super();
  }

  /** `<url>/v1`, the `baseURL` Anthropic clients take. */
  get baseURL(): string {
    return `${this.url}/v1`;
  }

  get chatRequests(): WireRequest[] {
    return this.requests.filter((request) => request.path.endsWith('/messages'));
  }

  protected async handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    if (this.options.apiKey !== undefined && request.headers['x-api-key'] !== this.options.apiKey) {
      this.json(res, 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      return;
    }
    if (request.method !== 'POST' || !request.path.endsWith('/messages')) {
      this.json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `Not found: ${request.method} ${request.path}` } });
      return;
    }
    const reply = this.nextReply(request) ?? (this.options.fallback ?? anthropicEchoReply)(request);
    if (isWireError(reply)) {
      const { status, message = `Error ${status}`, type = errorTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), headers } = reply.error;
      this.json(res, status, { type: 'error', error: { type, message } }, { ...(status === 429 ? this.options.rateLimitHeaders : {}), ...headers, 'request-id': `req_wire${this.requests.length}` });
      return;
    }
    if (isWireEmbeddings(reply)) throw new Error('Anthropic has no embeddings endpoint.');
    await this.messages(request, reply, res, req);
  }

  private async messages(request: WireRequest, turn: WireTurn, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const body = request.body ?? {};
    const model = String(body.model ?? 'claude-wire');
    const id = `msg_wire${this.requests.length}`;
    const text = turn.text ?? [];
    const calls = (turn.toolCalls ?? []).map((call, index) => ({
      id: call.id ?? `toolu_wire${this.requests.length}_${index}`,
      name: call.name,
      fragments: argumentFragments(call),
    }));
    const stopReason = turn.finishReason ?? (calls.length ? 'tool_use' : 'end_turn');
    const usage =
      turn.usage === null
        ? { inputTokens: 0, outputTokens: 0 }
        : (turn.usage ?? { inputTokens: roughTokens(JSON.stringify(body.messages ?? [])), outputTokens: roughTokens(text.join('') + calls.map((call) => call.fragments.join('')).join('')) });

    if (body.stream !== true) {
      this.json(res, 200, {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [
          ...(text.length ? [{ type: 'text', text: text.join('') }] : []),
          ...calls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.fragments.join('') || '{}') })),
        ],
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      });
      return;
    }

    const frames: string[] = [
      eventFrame('message_start', {
        type: 'message_start',
        message: { id, type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.inputTokens, output_tokens: 1 } },
      }),
    ];
    let index = 0;
    if (text.length) {
      frames.push(eventFrame('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
      frames.push(eventFrame('ping', { type: 'ping' }));
      for (const delta of text) frames.push(eventFrame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: delta } }));
      frames.push(eventFrame('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    }
    for (const call of calls) {
      frames.push(eventFrame('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }));
      for (const fragment of call.fragments) frames.push(eventFrame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: fragment } }));
      frames.push(eventFrame('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    }
    frames.push(eventFrame('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.outputTokens } }));
    frames.push(eventFrame('message_stop', { type: 'message_stop' }));
    await this.sse(req, res, frames, turn, { 'request-id': `req_wire${this.requests.length}` }, text.length ? 3 : 2);
  }
}
