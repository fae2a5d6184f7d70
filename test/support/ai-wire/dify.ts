import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { argumentFragments, dataFrame, isWireEmbeddings, isWireError, roughTokens, WireServerBase, type AiWireServer, type WireReply, type WireRequest, type WireTurn } from './common.js';

/**
 * The kind of Dify app the server plays:
 * - `chatflow` (advanced chat): `/chat-messages` streams `workflow_started`, `node_*`, `message`
 *   deltas, `workflow_finished` (with `outputs`, where scripted tool calls appear as
 *   `outputs.tool_calls`), then `message_end` with usage;
 * - `agent`: `/chat-messages` streams `agent_thought`s (scripted tool calls become thoughts of
 *   tools Dify ran itself), `agent_message` deltas, then `message_end`;
 * - `chat`: `/chat-messages` streams `message` deltas, then `message_end`;
 * - `/workflows/run` (any kind) streams `workflow_started`, `node_*`, `text_chunk` deltas and
 *   `workflow_finished` with `outputs` (`text`, `tool_calls`) and `total_tokens`.
 */
export type DifyWireApp = 'chatflow' | 'agent' | 'chat';

export interface DifyWireOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get Dify's 401 answer. */
  apiKey?: string;
  app?: DifyWireApp;
  /** The answer when no scripted reply is queued. Default: echoes the query. */
  fallback?: (request: WireRequest) => WireReply;
}

const errorCodes: Record<number, string> = { 400: 'invalid_param', 401: 'unauthorized', 404: 'not_found', 429: 'too_many_requests', 500: 'internal_server_error', 503: 'service_unavailable' };

/** The default answer: `You said: <query>`, in two deltas. */
export const difyEchoReply = (request: WireRequest): WireReply => ({ text: ['You said: ', String(request.body?.query ?? request.body?.inputs?.query ?? '')] });

/**
 * A local server speaking Dify's service API in streaming and blocking modes:
 * `POST /v1/chat-messages` (chat, agent and chatflow apps) and `POST /v1/workflows/run`, plus
 * `POST /v1/chat-messages/{task_id}/stop` (recorded, answers `{result: "success"}`). Errors use
 * Dify's `{code, message, status}` body; `streamError` sends an `error` event after the deltas.
 *
 * ```ts
 * const wire = await new DifyWireServer({ apiKey: 'app-test', app: 'chatflow' }).start();
 * // conf: { baseURL: wire.baseURL, apiKey: 'app-test' }
 * ```
 */
export class DifyWireServer extends WireServerBase<WireReply> implements AiWireServer {
  /** Dify conversation ids this server handed out. */
  readonly conversations = new Set<string>();

  constructor(private readonly options: DifyWireOptions = {}) {
    super();
  }

  /** `<url>/v1`, the API base URL of a Dify app. */
  get baseURL(): string {
    return `${this.url}/v1`;
  }

  get chatRequests(): WireRequest[] {
    return this.requests.filter((request) => request.path.endsWith('/chat-messages') || request.path.endsWith('/workflows/run'));
  }

  /** The stop requests received (`/chat-messages/{task_id}/stop`). */
  get stopRequests(): WireRequest[] {
    return this.requests.filter((request) => /\/chat-messages\/[^/]+\/stop$|\/workflows\/tasks\/[^/]+\/stop$/.test(request.path));
  }

  private error(res: ServerResponse, status: number, message: string, code?: string, headers?: Record<string, string>): void {
    this.json(res, status, { code: code ?? errorCodes[status] ?? (status >= 500 ? 'internal_server_error' : 'invalid_param'), message, status }, headers);
  }

  protected async handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    if (this.options.apiKey !== undefined && request.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      this.error(res, 401, 'Access token is invalid', 'unauthorized');
      return;
    }
    if (request.method === 'POST' && /\/(chat-messages|workflows\/tasks)\/[^/]+\/stop$/.test(request.path)) {
      this.json(res, 200, { result: 'success' });
      return;
    }
    const isChat = request.method === 'POST' && request.path.endsWith('/chat-messages');
    const isWorkflow = request.method === 'POST' && request.path.endsWith('/workflows/run');
    if (!isChat && !isWorkflow) {
      this.error(res, 404, 'The requested URL was not found on the server.', 'not_found');
      return;
    }
    const body = request.body ?? {};
    if (isChat && typeof body.query !== 'string') {
      this.error(res, 400, 'query is required', 'invalid_param');
      return;
    }
    if (typeof body.user !== 'string' || body.user === '') {
      this.error(res, 400, 'user is required', 'invalid_param');
      return;
    }
    if (isChat && body.conversation_id && !this.conversations.has(body.conversation_id)) {
      this.error(res, 404, 'Conversation Not Exists.', 'not_found');
      return;
    }
    const reply = this.nextReply(request) ?? (this.options.fallback ?? difyEchoReply)(request);
    if (isWireError(reply)) {
      this.error(res, reply.error.status, reply.error.message ?? `Error ${reply.error.status}`, reply.error.code, reply.error.headers);
      return;
    }
    if (isWireEmbeddings(reply)) throw new Error('Dify has no embeddings endpoint in its app API.');
    const conversationId = isChat ? (body.conversation_id || randomUUID()) : undefined;
    if (conversationId) this.conversations.add(conversationId);
    await this.answer(request, reply, isWorkflow ? 'workflow' : (this.options.app ?? 'chatflow'), conversationId, res, req);
  }

  private async answer(
    request: WireRequest,
    turn: WireTurn,
    kind: DifyWireApp | 'workflow',
    conversationId: string | undefined,
    res: ServerResponse,
    req: IncomingMessage,
  ): Promise<void> {
    const body = request.body ?? {};
    const taskId = randomUUID();
    const messageId = randomUUID();
    const runId = randomUUID();
    const created = Math.floor(Date.now() / 1000);
    const text = turn.text ?? [];
    const calls = (turn.toolCalls ?? []).map((call, index) => ({ id: call.id ?? `call_dify${this.requests.length}_${index}`, name: call.name, arguments: argumentFragments(call).join('') }));
    const usage =
      turn.usage === null ? null : (turn.usage ?? { inputTokens: roughTokens(String(body.query ?? JSON.stringify(body.inputs ?? {}))), outputTokens: roughTokens(text.join('') + calls.map((c) => c.arguments).join('')) });
    const usageBody = usage && { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens, total_price: '0', currency: 'USD', latency: 0.1 };
    const outputs: Record<string, unknown> = kind === 'workflow' ? { text: text.join('') } : { answer: text.join('') };
    if (calls.length) outputs.tool_calls = calls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments }));
    const status = turn.finishReason === 'failed' ? 'failed' : 'succeeded';

    if (body.response_mode !== 'streaming') {
      if (kind === 'workflow') {
        this.json(res, 200, { task_id: taskId, workflow_run_id: runId, data: { id: runId, workflow_id: 'wf-wire', status, outputs, error: null, elapsed_time: 0.1, total_tokens: usage ? usage.inputTokens + usage.outputTokens : 0, total_steps: 3, created_at: created, finished_at: created } });
      } else {
        this.json(res, 200, { event: 'message', task_id: taskId, id: messageId, message_id: messageId, conversation_id: conversationId, mode: kind === 'chatflow' ? 'advanced-chat' : kind === 'agent' ? 'agent-chat' : 'chat', answer: text.join(''), metadata: { usage: usageBody ?? {} }, created_at: created });
      }
      return;
    }

    const base = kind === 'workflow' ? { task_id: taskId, workflow_run_id: runId } : { task_id: taskId, message_id: messageId, conversation_id: conversationId, created_at: created };
    const frame = (event: string, extra: Record<string, unknown>) => dataFrame({ event, ...base, ...extra });
    const node = (phase: 'node_started' | 'node_finished', nodeId: string, nodeType: string, index: number, extra: Record<string, unknown> = {}) =>
      frame(phase, { data: { id: `${runId}-${nodeId}`, node_id: nodeId, node_type: nodeType, title: nodeType.toUpperCase(), index, created_at: created, ...extra } });
    const frames: string[] = [];
    let lead = 0;
    const usesWorkflow = kind === 'workflow' || kind === 'chatflow';
    if (usesWorkflow) {
      frames.push(frame('workflow_started', { data: { id: runId, workflow_id: 'wf-wire', sequence_number: this.requests.length, created_at: created } }));
      frames.push(node('node_started', 'start', 'start', 1), node('node_finished', 'start', 'start', 1, { status: 'succeeded', outputs: body.inputs ?? {} }));
      frames.push(node('node_started', 'llm', 'llm', 2));
      lead = frames.length;
    }
    if (kind === 'agent') {
      calls.forEach((call, index) => {
        frames.push(frame('agent_thought', { id: randomUUID(), position: index + 1, thought: `I should use ${call.name}.`, observation: '{"status":"done"}', tool: call.name, tool_input: JSON.stringify({ [call.name]: JSON.parse(call.arguments || '{}') }), message_files: [] }));
      });
      lead = frames.length;
    }
    for (const delta of text) {
      if (kind === 'workflow') frames.push(frame('text_chunk', { data: { text: delta, from_variable_selector: ['llm', 'text'] } }));
      else frames.push(frame(kind === 'agent' ? 'agent_message' : 'message', { id: messageId, answer: delta }));
    }
    if (turn.streamError) {
      frames.push(frame('error', { status: turn.streamError.status, code: turn.streamError.code ?? errorCodes[turn.streamError.status] ?? 'internal_server_error', message: turn.streamError.message }));
      await this.sse(req, res, frames, turn, {}, lead);
      return;
    }
    if (usesWorkflow) {
      frames.push(node('node_finished', 'llm', 'llm', 2, { status: 'succeeded', outputs: { text: text.join(''), ...(usageBody ? { usage: usageBody } : {}) }, execution_metadata: usage ? { total_tokens: usage.inputTokens + usage.outputTokens } : {} }));
      frames.push(
        frame('workflow_finished', {
          data: { id: runId, workflow_id: 'wf-wire', status, outputs, error: status === 'failed' ? 'The workflow failed.' : null, elapsed_time: 0.2, total_tokens: usage ? usage.inputTokens + usage.outputTokens : 0, total_steps: 3, created_at: created, finished_at: created },
        }),
      );
    }
    if (kind !== 'workflow') frames.push(frame('message_end', { id: messageId, metadata: { usage: usageBody ?? {}, retriever_resources: [] } }));
    await this.sse(req, res, frames, turn, {}, lead);
  }
}
