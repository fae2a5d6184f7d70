import type { IncomingMessage, ServerResponse } from 'node:http';
import { argumentFragments, dataFrame, isWireEmbeddings, isWireError, roughTokens, WireServerBase, wireEmbedding, type AiWireServer, type WireReply, type WireRequest, type WireTurn } from './common.js';

export interface GeminiWireOptions {
  /**
   * When set, a request whose `x-goog-api-key` header (or `key` query parameter) differs gets
   * what the Gemini API answers to a wrong key: HTTP 400 `INVALID_ARGUMENT` with reason
   * `API_KEY_INVALID` (and 403 `PERMISSION_DENIED` when no key is sent).
   */
  apiKey?: string;
  /** The answer when no scripted reply is queued. Default: echoes the last user message. */
  fallback?: (request: WireRequest) => WireReply;
}

const statusNames: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const lastUserText = (body: any): string => {
  const contents: any[] = Array.isArray(body?.contents) ? body.contents : [];
  const last = [...contents].reverse().find((content) => content.role === 'user' && content.parts?.some((part: any) => typeof part.text === 'string'));
  return last ? last.parts.map((part: any) => part.text ?? '').join('') : '';
};

/** The default answer: `You said: <last user message>`, in two deltas. */
export const geminiEchoReply = (request: WireRequest): WireReply => ({ text: ['You said: ', lastUserText(request.body)] });

/**
 * A local server speaking the Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`,
 * `:generateContent`, `:embedContent` and `:batchEmbedContents`), scripted per request. Text
 * streams as one `GenerateContentResponse` per delta; function calls arrive whole (the Gemini API
 * does not split `functionCall.args`), one call per chunk; the last chunk carries `finishReason`
 * and `usageMetadata`. Errors use Google's `{error: {code, message, status, details}}` body; a 429
 * carries a `RetryInfo` detail with the `retryDelay` of its `retry-after` header.
 *
 * ```ts
 * const wire = await new GeminiWireServer({ apiKey: 'AIza-test' }).start();
 * // conf: { model: 'gemini-2.5-flash', baseURL: wire.baseURL, apiKey: 'AIza-test' }
 * ```
 */
export class GeminiWireServer extends WireServerBase<WireReply> implements AiWireServer {
  constructor(private readonly options: GeminiWireOptions = {}) {
    super();
  }

  /** `<url>/v1beta`, the `baseURL` Gemini clients take. */
  get baseURL(): string {
    return `${this.url}/v1beta`;
  }

  get chatRequests(): WireRequest[] {
    return this.requests.filter((request) => /:(stream)?[gG]enerateContent$/.test(request.path));
  }

  private error(res: ServerResponse, status: number, message: string, extra: { headers?: Record<string, string>; details?: unknown[]; statusName?: string } = {}): void {
    this.json(res, status, { error: { code: status, message, status: extra.statusName ?? statusNames[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'), ...(extra.details ? { details: extra.details } : {}) } }, extra.headers);
  }

  protected async handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    if (this.options.apiKey !== undefined) {
      const sent = (request.headers['x-goog-api-key'] as string | undefined) ?? request.query.get('key') ?? undefined;
      if (sent === undefined) {
        this.error(res, 403, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
        return;
      }
      if (sent !== this.options.apiKey) {
        this.error(res, 400, 'API key not valid. Please pass a valid API key.', {
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } }],
        });
        return;
      }
    }
    const match = /\/models\/([^/:]+):(streamGenerateContent|generateContent|embedContent|batchEmbedContents)$/.exec(request.path);
    if (request.method !== 'POST' || !match) {
      this.error(res, 404, `Method not found: ${request.method} ${request.path}.`);
      return;
    }
    const [, model, method] = match;
    const isEmbed = method === 'embedContent' || method === 'batchEmbedContents';
    const reply = this.nextReply(request) ?? (this.options.fallback ?? (isEmbed ? (): WireReply => ({ embeddings: [] }) : geminiEchoReply))(request);
    if (isWireError(reply)) {
      const { status, message = `Error ${status}`, headers, type } = reply.error;
      // Google sends the wait as a RetryInfo detail, not as a retry-after header.
      const { 'retry-after': retryAfter, ...otherHeaders } = headers ?? {};
      const details = retryAfter !== undefined ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` }] : undefined;
      this.error(res, status, message, { headers: otherHeaders, details, statusName: type });
      return;
    }
    if (isEmbed) {
      const texts: string[] =
        method === 'embedContent'
          ? [(request.body?.content?.parts ?? []).map((part: any) => part.text ?? '').join('')]
          : (request.body?.requests ?? []).map((item: any) => (item.content?.parts ?? []).map((part: any) => part.text ?? '').join(''));
      const vectors = isWireEmbeddings(reply) && reply.embeddings.length ? reply.embeddings : texts.map((text) => wireEmbedding(text));
      if (method === 'embedContent') this.json(res, 200, { embedding: { values: vectors[0] } });
      else this.json(res, 200, { embeddings: vectors.map((values) => ({ values })) });
      return;
    }
    if (isWireEmbeddings(reply)) throw new Error('An embeddings reply was scripted for a generateContent request.');
    await this.generate(request, reply, model, method === 'streamGenerateContent', res, req);
  }

  private async generate(request: WireRequest, turn: WireTurn, model: string, stream: boolean, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const text = turn.text ?? [];
    const calls = (turn.toolCalls ?? []).map((call) => ({ ...(call.id ? { id: call.id } : {}), name: call.name, args: JSON.parse(argumentFragments(call).join('') || '{}') as unknown }));
    const finishReason = turn.finishReason ?? 'STOP';
    const usage =
      turn.usage === null
        ? undefined
        : (turn.usage ?? { inputTokens: roughTokens(JSON.stringify(request.body?.contents ?? [])), outputTokens: roughTokens(text.join('') + JSON.stringify(calls.map((call) => call.args))) });
    const usageMetadata = usage && { promptTokenCount: usage.inputTokens, candidatesTokenCount: usage.outputTokens, totalTokenCount: usage.inputTokens + usage.outputTokens };
    const responseId = `wire${this.requests.length}`;

    if (!stream) {
      this.json(res, 200, {
        candidates: [
          {
            content: { role: 'model', parts: [...(text.length ? [{ text: text.join('') }] : []), ...calls.map((call) => ({ functionCall: call }))] },
            finishReason,
            index: 0,
          },
        ],
        ...(usageMetadata ? { usageMetadata } : {}),
        modelVersion: model,
        responseId,
      });
      return;
    }
    const chunk = (parts: unknown[], last: boolean) =>
      dataFrame({
        candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason } : {}) }],
        ...(last && usageMetadata ? { usageMetadata } : {}),
        modelVersion: model,
        responseId,
      });
    const pieces: unknown[][] = [...text.map((delta) => [{ text: delta }]), ...calls.map((call) => [{ functionCall: call }])];
    if (pieces.length === 0) pieces.push([{ text: '' }]);
    const frames = pieces.map((parts, index) => chunk(parts, index === pieces.length - 1));
    await this.sse(req, res, frames, turn);
  }
}
