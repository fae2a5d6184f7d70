import createClient, { type Client } from 'openapi-fetch';
import { ConversationTurns } from './conversations.js';
import type { paths } from './generated/openapi.js';
import { resumableRunStream, type ResumeOptions, type RunEvent } from './run-events.js';
import { UserChannel, type UserChannelOptions } from './user-channel.js';

export interface TrellisClientOptions {
  /** The server's address (with its base path), e.g. `https://trellis.example.com`. */
  baseUrl: string;
  /** A JWT, API key, agent or OAuth token, sent as `Authorization: Bearer` (a function is asked on every request). */
  token?: string | (() => string | undefined);
  fetch?: typeof globalThis.fetch;
}

export interface DeploymentRunInput {
  inputs?: Record<string, unknown>;
  version?: string;
  timeout?: number;
  /** The deployment token (`X-Deployment-Token`) for deployments with access `token`. */
  deploymentToken?: string;
}

/**
 * A client for one Trellis server: `api` is openapi-fetch typed with every operation of
 * `/openapi.json`; the helpers cover what a generator cannot: streams that resume, the user
 * channel, conversation turns.
 */
export class TrellisClient {
  readonly api: Client<paths>;
  readonly conversations: ConversationTurns;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly baseUrl: string;

  constructor(private readonly options: TrellisClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.fetchImpl(request) });
    this.api.use({
      onRequest: ({ request }) => {
        const token = this.token();
        if (token && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
        return request;
      },
    });
    this.conversations = new ConversationTurns(this.api);
  }

  token(): string | undefined {
    return typeof this.options.token === 'function' ? this.options.token() : this.options.token;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = this.token();
    return { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
  }

  /** The events of a stored run (`GET /documents/{documentId}/runs/{runId}/events`), resumed after drops. */
  followRun(documentId: string, runId: string, options: ResumeOptions = {}): AsyncGenerator<RunEvent> {
    const url = `${this.baseUrl}/documents/${encodeURIComponent(documentId)}/runs/${encodeURIComponent(runId)}/events`;
    return resumableRunStream((after, _runId, signal) => this.fetchImpl(url, { headers: this.headers(after ? { 'last-event-id': String(after) } : {}), signal }), options);
  }

  /**
   * Runs a deployed block (`POST /block/{bid}/api`) and follows its events; after a drop the
   * stream continues by attaching to the same run (`runId` with `Last-Event-ID`), so the run is
   * started once and every event arrives once.
   */
  runDeployment(bid: string, input: DeploymentRunInput = {}, options: ResumeOptions = {}): AsyncGenerator<RunEvent> {
    const url = `${this.baseUrl}/block/${encodeURIComponent(bid)}/api`;
    const extra: Record<string, string> = input.deploymentToken ? { 'x-deployment-token': input.deploymentToken } : {};
    // Until the run's id is known, a repeated POST carries the same key, so it attaches to the run the first one started.
    const idempotencyKey = crypto.randomUUID();
    const first = { inputs: input.inputs ?? {}, ...(input.version ? { version: input.version } : {}), ...(input.timeout ? { timeout: input.timeout } : {}) };
    return resumableRunStream((after, runId, signal) => {
      if (after > 0 && !runId) throw new Error('The run started without a run_start event.');
      const body = runId ? { runId, ...(input.version ? { version: input.version } : {}) } : first;
      return this.fetchImpl(url, {
        method: 'POST',
        headers: this.headers({ 'content-type': 'application/json', ...extra, ...(runId ? {} : { 'idempotency-key': idempotencyKey }), ...(after ? { 'last-event-id': String(after) } : {}) }),
        body: JSON.stringify(body),
        signal,
      });
    }, options);
  }

  /** The JSON-RPC user channel (`/v3/wss`) with this client's token; call `connect()` on it. */
  userChannel(options: Omit<UserChannelOptions, 'url' | 'token'> = {}): UserChannel {
    return new UserChannel({ ...options, url: this.baseUrl.replace(/^http/, 'ws'), token: () => this.token() ?? '' });
  }
}

export const createTrellisClient = (options: TrellisClientOptions) => new TrellisClient(options);
