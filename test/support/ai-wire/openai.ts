import type { IncomingMessage, ServerResponse } from 'node:http';
import { argumentFragments, dataFrame, isWireEmbeddings, isWireError, roughTokens, WireServerBase, wireEmbedding, type AiWireServer, type WireReply, type WireRequest, type WireTurn } from './common.js';

export interface OpenAiWireOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401 answer. */
  apiKey?: string;
  /** The answer when no scripted reply is queued. Default: echoes the last user message. */
  fallback?: (request: WireRequest) => WireReply;
}


const lastUserText = (body: any): string => {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const last = [...messages].reverse().find((message) => message.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return Array.isArray(last.content) ? last.content.map((part: any) => part.text ?? '').join('') : '';
};

/** The default answer: `You said: <last user message>`, in two deltas. */
export const openAiEchoReply = (request: WireRequest): WireReply => ({ text: ['You said: ', lastUserText(request.body)] });

/**
 * A local server speaking OpenAI's HTTP API (`POST /v1/chat/completions`, streamed and not, and
 * `POST /v1/embeddings`), scripted per request, for tests of OpenAI-compatible clients.
 *
 * ```ts
 * const wire = await new OpenAiWireServer({ apiKey: 'sk-test' }).start();
 * wire.enqueue({ toolCalls: [{ name: 'weather', arguments: ['{"city":', '"Paris"}'] }] }, { text: ['Sunny'] });
 * // conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-test' }
 * wire.requests[0].body.messages; // what the client sent
 * ```
 */
export class OpenAiWireServer extends WireServerBase<WireReply> implements AiWireServer {
  constructor(private readonly options: OpenAiWireOptions = {}) {
    super();
  }

  /** `<url>/v1`, the `baseURL` OpenAI clients take. */
  get baseURL(): string {
    return `${this.url}/v1`;
  }

  /** The chat completion requests received (bodies), in order. */
  get chatRequests(): WireRequest[] {
    return this.requests.filter((request) => request.path.endsWith('/chat/completions'));
  }

  protected async handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    if (this.options.apiKey !== undefined && request.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      this.json(res, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
      return;
    }
    const isChat = request.method === 'POST' && request.path.endsWith('/chat/completions');
    const isEmbed = request.method === 'POST' && request.path.endsWith('/embeddings');
    if (!isChat && !isEmbed) {
      this.json(res, 404, { error: { message: `Unknown request URL: ${request.method} ${request.path}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
      return;
    }
    const fallback = this.options.fallback ?? (isChat ? openAiEchoReply : (): WireReply => ({ embeddings: [] }));
    const reply: WireReply = this.nextReply(request) ?? fallback(request);
    if (isWireError(reply)) {
      const { status, message = `Error ${status}`, type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error', code, headers } = reply.error;
      this.json(res, status, { error: { message, type, param: null, code: code ?? null } }, headers);
      return;
    }
    if (isEmbed) {
      const inputs: string[] = Array.isArray(request.body?.input) ? request.body.input : [String(request.body?.input ?? '')];
      const embeddings = isWireEmbeddings(reply) && reply.embeddings.length ? reply.embeddings : inputs.map((text) => wireEmbedding(text));
      const tokens = isWireEmbeddings(reply) && reply.usage ? reply.usage.inputTokens : inputs.reduce((sum, text) => sum + roughTokens(text), 0);
      this.json(res, 200, {
        object: 'list',
        data: embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
        model: request.body?.model ?? 'wire-embedding',
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
      return;
    }
    if (isWireEmbeddings(reply)) throw new Error('An embeddings reply was scripted for a chat request.');
    await this.chat(request, reply as WireTurn, res, req);
  }

  private async chat(request: WireRequest, turn: WireTurn, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const body = request.body ?? {};
    const model = String(body.model ?? 'wire-model');
    const id = `chatcmpl-wire${this.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    const text = turn.text ?? [];
    const calls = (turn.toolCalls ?? []).map((call, index) => {
      const fragments = argumentFragments(call);
      return { id: call.id ?? `call_wire${this.requests.length}_${index}`, name: call.name, fragments, full: fragments.join('') };
    });
    const finishReason = turn.finishReason ?? (calls.length ? 'tool_calls' : 'stop');
    const inputText = JSON.stringify(body.messages ?? []);
    const usage = turn.usage === null ? null : (turn.usage ?? { inputTokens: roughTokens(inputText), outputTokens: roughTokens(text.join('') + calls.map((call) => call.full).join('')) || 1 });
    const usageBody = usage && { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens };

    if (body.stream !== true) {
      this.json(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text.length ? text.join('') : null,
              ...(calls.length ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.full } })) } : {}),
            },
            finish_reason: finishReason,
          },
        ],
        ...(usageBody ? { usage: usageBody } : {}),
      });
      return;
    }

    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      dataFrame({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
    const frames: string[] = [chunk({ role: 'assistant', content: '' })];
    for (const delta of text) frames.push(chunk({ content: delta }));
    calls.forEach((call, index) => {
      frames.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const fragment of call.fragments) frames.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    });
    frames.push(chunk({}, finishReason));
    if (usageBody && body.stream_options?.include_usage === true) {
      frames.push(dataFrame({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageBody }));
    }
    frames.push(dataFrame('[DONE]'));
    await this.sse(req, res, frames, turn, {}, 1);
  }
}
