import type { Logger } from 'pino';
import type { AccessRevokedSignal, AccessSubject } from '../../../kernel/auth/access-revocation.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { RpcContext, RpcMethodDefinition } from '../../../kernel/module.js';
import { validateInput } from '../../../kernel/validation.js';
import type { ChannelSession, SocketLike } from '../../../kernel/ws/channel.js';
import type { ChannelTarget } from '../channel-targets.js';
import type { RealtimeConfig } from '../realtime.config.js';
import type { TrackedConnection } from '../services/connection-registry.js';
import type { Attachment, PushHub, PushSubscriber, ResumePoint } from '../services/push-hub.js';
import type { ChannelKind } from '../topics.js';
import { parseErrorResponse, parseRequest, RpcError, rpcCodes, toRpcError, type RpcId, type RpcRequest, type RpcResponse } from './json-rpc.js';

/** Close codes of the realtime channels (documented in docs/http/websocket.md). */
export const realtimeCloseCodes = {
  /** Standard: a message above `realtime.maxMessageBytes`. */
  messageTooBig: 1009,
  /** `auth` not completed within `realtime.authTimeoutMs`. */
  authTimeout: 4401,
  /**
   * The credential the socket authenticated with was revoked (reason `credential_revoked`), or a
   * check after a change to its user (disabled, password changed, ...) refused it (`access_revoked`).
   */
  credentialRevoked: 4403,
  /** Nothing received within `realtime.heartbeatTimeoutMs`. */
  heartbeatTimeout: 4408,
  /** The user, application or device already has the most sockets allowed. */
  tooManyConnections: 4429,
  /** The client reads too slowly: more than 1 MiB waits in its send buffer. */
  slowConsumer: 4503,
} as const;

/** Above this many bytes waiting in a socket's send buffer the client counts as too slow. */
const SLOW_CONSUMER_BYTES = 1 << 20;

/** The field of the `auth` result (and params) that names the channel's own id. */
const idField: Record<ChannelKind, 'userId' | 'appId' | 'hdId'> = { user: 'userId', application: 'appId', hardware: 'hdId' };
const variantName: Record<ChannelKind, string> = { user: 'User', application: 'Application', hardware: 'Hardware' };

/** What a JSON-RPC method added by a module sees of the socket that called it (`ctx.session`). */
export interface RealtimeSessionInfo {
  readonly kind: ChannelKind;
  /** The user id (user channel), application id or device id the socket is attached to. */
  readonly targetId: string;
  /** The authenticated user: the socket's own user, or the owner of the application or device. */
  readonly userId: string;
  /** The principal of the `auth` request (the connection URL's before `auth`). */
  readonly principal: Principal;
  readonly authenticated: boolean;
  readonly remoteAddress: string;
}

/** What every session of one gateway shares (built once, not per socket). */
export interface RealtimeSessionEnv {
  config: RealtimeConfig;
  /** Methods other modules offer, per kind of channel, by name. */
  methods: ReadonlyMap<ChannelKind, ReadonlyMap<string, RpcMethodDefinition>>;
  authenticate(token: string, ip: string): Promise<Principal>;
  /** Looks the channel's id up again at `auth` (application and hardware channels). */
  resolveTarget(id: string): Promise<ChannelTarget | null>;
  hub: PushHub;
  registry: { add(connection: TrackedConnection): boolean; remove(connection: TrackedConnection): void; peers?(connection: TrackedConnection): Iterable<TrackedConnection> };
  /** A fresh context for one method call of `session` (its `em` is forked on first use only). */
  context(session: RealtimeSessionInfo): RpcContext & { session: RealtimeSessionInfo };
  /** Registers the socket for access-revoked signals (every process); returns the unregistering function. */
  watch(subject: () => AccessSubject, watcher: (signal: AccessRevokedSignal) => void): () => void;
  log: Logger;
}

/** What the upgrade established: the kind of channel, its id, and the principal of the URL's token. */
export interface AcceptedConnection {
  kind: ChannelKind;
  targetId: string;
  principal: Principal;
  /** The token of the connection URL, checked again when an access-revoked signal concerns it. */
  token: string;
}

/**
 * One JSON-RPC 2.0 WebSocket, transport-free: the host feeds it messages and tells it when the
 * socket closed; it answers through `SocketLike`. It implements the `auth` handshake, `ping`,
 * batches and notifications, dispatches other methods to the modules that declared them, and
 * delivers the pushes of its user, application or device with their sequence numbers.
 */
export class RealtimeSession implements ChannelSession, TrackedConnection, PushSubscriber {
  readonly kind: ChannelKind;
  readonly targetId: string;
  private principal: Principal | null = null;
  private attachment?: Attachment;
  /** Pushes that arrive between attaching and sending the `auth` reply wait here. */
  private held: string[] | null = null;
  /** Messages that arrive while an `auth` is being processed wait for it. */
  private gate?: Promise<void>;
  private closed = false;
  /** A newer socket of the same sign-in was announced to this one (`session_replaced`, sent once). */
  private superseded = false;
  private cleaned = false;
  private readonly openedAt = Date.now();
  private lastActivity = this.openedAt;
  private readonly upgradePrincipal: Principal;
  private readonly upgradeToken: string;
  private authToken: string | null = null;
  private unwatch?: () => void;
  private sessionInfo?: RealtimeSessionInfo;
  /** The methods of this socket's kind of channel, looked up once (not per message). */
  private readonly methods: ReadonlyMap<string, RpcMethodDefinition>;

  constructor(
    private readonly socket: SocketLike,
    private readonly env: RealtimeSessionEnv,
    accepted: AcceptedConnection,
  ) {
    this.kind = accepted.kind;
    this.targetId = accepted.targetId;
    this.upgradePrincipal = accepted.principal;
    this.upgradeToken = accepted.token;
    this.methods = env.methods.get(accepted.kind) ?? noMethods;
  }

  /** What module methods see as `ctx.session` (built on first use). */
  get info(): RealtimeSessionInfo {
    if (!this.sessionInfo) {
      const current = () => this.principal ?? this.upgradePrincipal;
      const authenticated = () => this.principal !== null;
      this.sessionInfo = Object.freeze({
        kind: this.kind,
        targetId: this.targetId,
        remoteAddress: this.socket.remoteAddress,
        get userId() {
          return current().userId;
        },
        get principal() {
          return current();
        },
        get authenticated() {
          return authenticated();
        },
      });
    }
    return this.sessionInfo;
  }

  /** Registers the socket; closes it at once (4429) when its user or target has too many. */
  start(): this {
    if (!this.env.registry.add(this)) {
      this.cleaned = true;
      this.closed = true;
      this.socket.close(realtimeCloseCodes.tooManyConnections, 'too_many_connections');
      return this;
    }
    this.unwatch = this.env.watch(
      () => this.accessSubject,
      (signal) => void this.recheck(signal),
    );
    return this;
  }

  /** What access-revoked signals this socket listens for. */
  get accessSubject(): AccessSubject {
    const clientId = this.principal?.clientId ?? this.upgradePrincipal.clientId;
    const actorId = this.principal?.actorId ?? this.upgradePrincipal.actorId;
    return { userId: this.upgradePrincipal.userId, credentialIds: this.credentialIds, ...(clientId ? { clientId } : {}), ...(actorId ? { actorId } : {}) };
  }

  /**
   * A revoked credential closes the socket at once (4403 `credential_revoked`); a change to its
   * user makes it check both of its tokens again and close (4403 `access_revoked`) when one fails.
   */
  async recheck(signal: AccessRevokedSignal): Promise<void> {
    if (this.closed) return;
    if (signal.kind === 'credentials' || signal.kind === 'oauth_client') {
      this.close(realtimeCloseCodes.credentialRevoked, 'credential_revoked');
      return;
    }
    const tokens = [this.upgradeToken, ...(this.authToken ? [this.authToken] : [])];
    try {
      for (const token of tokens) await this.env.authenticate(token, this.socket.remoteAddress);
    } catch (error) {
      if (error instanceof TrellisError && error.status < 500) this.close(realtimeCloseCodes.credentialRevoked, 'access_revoked');
      else this.env.log.warn({ err: error, channel: this.kind, targetId: this.targetId }, 'realtime: could not check a socket\'s access again');
    }
  }

  get credentialIds(): readonly string[] {
    const ids: string[] = [];
    if (this.upgradePrincipal.credentialId) ids.push(this.upgradePrincipal.credentialId);
    if (this.principal?.credentialId) ids.push(this.principal.credentialId);
    return ids;
  }

  // --- ChannelSession ----------------------------------------------------------------------

  onMessage(data: string | Uint8Array, _isBinary: boolean): void {
    if (this.closed) return;
    this.lastActivity = Date.now();
    const { maxMessageBytes } = this.env.config;
    // A string of n UTF-16 units has at most 3n UTF-8 bytes: short ones need no count.
    const size = typeof data === 'string' ? (data.length * 3 <= maxMessageBytes ? 0 : Buffer.byteLength(data)) : data.byteLength;
    if (size > maxMessageBytes) {
      this.close(realtimeCloseCodes.messageTooBig, 'message_too_big');
      return;
    }
    const text = typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.send(PARSE_ERROR);
      return;
    }
    if (!this.gate && !Array.isArray(message) && !isAuth(message)) {
      // One request, no auth running: a synchronous method is answered before this returns (in
      // the transport's message callback, where uWS joins the writes), with no promise at all.
      const answer = this.call(message, noSteps);
      if (typeof answer === 'string') this.send(answer);
      else if (answer !== null) answer.then((text) => text !== null && this.send(text), (error: unknown) => this.handleFailed(error));
      return;
    }
    const run = () => this.handle(message);
    const previous = this.gate;
    const task = previous ? previous.then(run) : run();
    if (containsAuth(message)) {
      const gate: Promise<void> = task.then(
        () => undefined,
        () => undefined,
      );
      this.gate = gate;
      void gate.then(() => {
        if (this.gate === gate) this.gate = undefined;
      });
    }
    task.catch((error: unknown) => this.handleFailed(error));
  }

  private handleFailed(error: unknown): void {
    this.env.log.error({ err: error, channel: this.kind, targetId: this.targetId }, 'realtime: handling a message failed');
  }

  onClose(_code: number, _reason: string): void {
    this.closed = true;
    this.cleanup();
  }

  // --- TrackedConnection -------------------------------------------------------------------

  checkDeadlines(nowMs: number): void {
    if (this.closed) return;
    if (!this.principal && nowMs - this.openedAt >= this.env.config.authTimeoutMs) {
      this.close(realtimeCloseCodes.authTimeout, 'auth_timeout');
    } else if (nowMs - this.lastActivity >= this.env.config.heartbeatTimeoutMs) {
      this.close(realtimeCloseCodes.heartbeatTimeout, 'heartbeat_timeout');
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.cleanup();
    try {
      this.socket.close(code, reason);
    } catch {
      // already gone
    }
  }

  // --- PushSubscriber ----------------------------------------------------------------------

  deliver(frames: readonly string[]): void {
    if (this.closed) return;
    if (this.held) this.held.push(...frames);
    else this.sendAll(frames);
  }

  // --- JSON-RPC ----------------------------------------------------------------------------

  /** A batch, or a message with `auth` in it (what waits for an `auth` runs here too). */
  private async handle(message: unknown): Promise<void> {
    const after: Array<() => void> = [];
    if (Array.isArray(message)) {
      if (message.length === 0) {
        this.send(invalid('an empty batch is not a request'));
        return;
      }
      if (message.length > this.env.config.maxBatchSize) {
        this.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: {
              code: rpcCodes.invalidRequest,
              message: `Invalid Request: a batch holds at most ${this.env.config.maxBatchSize} requests`,
              data: { error: 'batch_too_large', max: this.env.config.maxBatchSize },
            },
          }),
        );
        return;
      }
      // In order, one after the other; each answer is serialized once and the batch joined from them.
      const responses: string[] = [];
      for (const item of message) {
        const answer = this.call(item, after);
        const text = typeof answer === 'string' || answer === null ? answer : await answer;
        if (text !== null) responses.push(text);
      }
      if (responses.length > 0) this.send(`[${responses.join(',')}]`);
    } else {
      const answer = this.call(message, after);
      const text = typeof answer === 'string' || answer === null ? answer : await answer;
      if (text !== null) this.send(text);
    }
    for (const step of after) step();
  }

  /**
   * One request: its serialized response (`null` for a notification), synchronously when the
   * method answered synchronously, else a promise of it.
   */
  private call(item: unknown, after: Array<() => void>): string | null | Promise<string | null> {
    const request = parseRequest(item);
    if ('invalid' in request) return JSON.stringify(request.invalid);
    let result: unknown;
    try {
      result = this.dispatch(request, after);
    } catch (thrown) {
      return this.failure(request, thrown);
    }
    if (isThenable(result)) {
      return Promise.resolve(result).then(
        (value) => this.success(request, value),
        (thrown: unknown) => this.failure(request, thrown),
      );
    }
    return this.success(request, result);
  }

  private success(request: RpcRequest, result: unknown): string | null {
    if (request.notification) return null;
    try {
      return resultResponse(request.id ?? null, result);
    } catch (thrown) {
      // A result JSON cannot hold (a cycle, a BigInt): answer an internal error, say why in the log.
      return this.failure(request, thrown);
    }
  }

  private failure(request: RpcRequest, thrown: unknown): string | null {
    const { error, unexpected } = toRpcError(thrown);
    if (unexpected) this.env.log.error({ err: thrown, method: request.method, channel: this.kind, targetId: this.targetId }, 'realtime: method failed');
    return request.notification ? null : JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, error });
  }

  /** The method's result, or a promise of it when the method (or its params' validation) is asynchronous. */
  private dispatch(request: RpcRequest, after: Array<() => void>): unknown {
    if (request.method === 'auth') return this.auth(request.params, after);
    if (request.method === 'ping') return 'pong';
    if (!this.principal) throw this.authFailed('not_authenticated', 'send the auth request first');
    const definition = this.methods.get(request.method);
    if (!definition) {
      throw new RpcError(rpcCodes.methodNotFound, `Method not found: ${request.method}`, { error: 'method_not_found' });
    }
    if (!definition.params) return definition.handler(request.params, this.env.context(this.info));
    let params = request.params;
    if (params === undefined) params = {};
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      throw new RpcError(rpcCodes.invalidParams, 'Invalid params: expected an object', { error: 'invalid_params' });
    }
    return validateInput(definition.params, params, 'params', { status: 422, code: 'invalid_params' }).then((valid) => definition.handler(valid, this.env.context(this.info)));
  }

  private async auth(params: unknown, after: Array<() => void>): Promise<unknown> {
    const { kind, targetId } = this;
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      throw invalidParams('auth params must be an object with token');
    }
    const p = params as Record<string, unknown>;
    if (typeof p.token !== 'string' || p.token.length === 0) throw invalidParams('token is required');
    if (kind !== 'user') {
      const field = idField[kind];
      const given = p[field];
      if (typeof given !== 'string' || given.length === 0) throw invalidParams(`${field} is required`);
      if (given.toLowerCase() !== targetId.toLowerCase()) throw this.authFailed('target_mismatch', `${field} does not match the id in the connection URL`);
    }
    const resume = readResumePoint(p);

    let principal: Principal;
    try {
      principal = await this.env.authenticate(p.token, this.socket.remoteAddress);
    } catch (error) {
      if (error instanceof TrellisError && error.kind === 'unauthenticated') throw this.authFailed(error.code, error.message);
      throw error;
    }
    if (principal.userId !== this.upgradePrincipal.userId) {
      throw this.authFailed('token_mismatch', 'the token belongs to another user than the token in the connection URL');
    }
    // A device token (its principal names the device) opens that device's own channel only.
    for (const used of [principal, this.upgradePrincipal]) {
      if (kind === 'user' && (used.kind === 'device' || used.device)) {
        throw this.authFailed('credential_not_allowed', 'a device token opens its own device channel, not the user channel');
      }
      if (kind !== 'user' && used.device && (used.device.kind !== kind || used.device.id.toLowerCase() !== targetId.toLowerCase())) {
        throw this.authFailed('device_token_mismatch', `the device token belongs to another ${used.device.kind === 'hardware' ? 'hardware device' : 'application'}`);
      }
    }
    if (kind !== 'user') {
      const target = await this.env.resolveTarget(targetId);
      if (!target || target.kind !== kind) throw this.authFailed('target_not_found', `no ${kind === 'application' ? 'application' : 'hardware device'} has this id`);
      if (target.ownerId !== principal.userId) {
        throw new RpcError(rpcCodes.insufficientPermission, `Insufficient permission: the ${kind === 'application' ? 'application' : 'hardware device'} belongs to another user`, {
          error: 'insufficient_permission',
        });
      }
    }
    if (this.attachment) {
      // Authenticating again on a live socket (a refreshed token): pushes keep flowing as they were.
      this.principal = principal;
      this.authToken = p.token;
      return { status: 'authenticated', [idField[kind]]: targetId, epoch: this.attachment.epoch, seq: this.attachment.seq };
    }
    if (this.closed) throw new RpcError(rpcCodes.internalError, 'The socket closed during authentication', { error: 'socket_closed' });
    this.held = [];
    let attachment: Attachment;
    try {
      attachment = await this.env.hub.attach(kind, targetId, this, resume);
    } catch (error) {
      this.held = null;
      throw error;
    }
    if (this.closed) {
      attachment.detach();
      throw new RpcError(rpcCodes.internalError, 'The socket closed during authentication', { error: 'socket_closed' });
    }
    this.attachment = attachment;
    this.principal = principal;
    this.authToken = p.token;
    after.push(() => this.release(attachment));
    if (kind === 'user') after.push(() => this.replaceSession());
    return { status: 'authenticated', [idField[kind]]: targetId, epoch: attachment.epoch, seq: attachment.seq };
  }

  /** The sign-in this socket authenticated with (a JWT's `jti`, an API key's id, ...), if it has one. */
  private get sessionKey(): string | undefined {
    return this.principal?.credentialId;
  }

  /**
   * A newer user-channel socket of the same sign-in (same credential) in this process: the older
   * ones hear that they were superseded, a `status` notice of their own (no `seq`: it is about the
   * socket, not the user's stream of pushes). They stay open; the client decides. Each socket hears
   * it once, the first time it is superseded: n sockets of one sign-in cost n notices, not n².
   */
  private replaceSession(): void {
    const key = this.sessionKey;
    if (!key || !this.env.registry.peers) return;
    let frame: string | undefined;
    for (const peer of this.env.registry.peers(this)) {
      if (!(peer instanceof RealtimeSession) || peer.superseded || peer.closed || !peer.attachment || peer.sessionKey !== key) continue;
      frame ??= JSON.stringify({ jsonrpc: '2.0', method: 'status', params: { type: 'session_replaced', timestamp: Date.now() } });
      peer.superseded = true;
      peer.send(frame);
    }
  }

  /** After the `auth` reply: what the client missed (or a resync notice), then live pushes. */
  private release(attachment: Attachment): void {
    const { outcome } = attachment;
    const frames = outcome.kind === 'resumed' ? [...outcome.frames] : [];
    if (outcome.kind === 'resync') {
      frames.push(JSON.stringify({ jsonrpc: '2.0', method: 'resync_required', params: { epoch: attachment.epoch, seq: attachment.seq, reason: outcome.reason } }));
    }
    frames.push(...(this.held ?? []));
    this.held = null;
    this.sendAll(frames);
  }

  private authFailed(reason: string, detail: string): RpcError {
    return new RpcError(rpcCodes.authenticationFailed, `${variantName[this.kind]} authentication failed: ${detail}`, {
      error: `${this.kind}_auth_failed`,
      reason,
    });
  }

  // --- output ------------------------------------------------------------------------------

  private send(text: string): void {
    if (this.closed) return;
    // `send` answers true only when the message went out without queueing: the queue (a native
    // call on uWS) needs a look only otherwise.
    if (!this.socket.send(text, false) && this.socket.bufferedAmount > SLOW_CONSUMER_BYTES) this.close(realtimeCloseCodes.slowConsumer, 'slow_consumer');
  }

  /** Several messages in one write where the transport can cork. */
  private sendAll(texts: readonly string[]): void {
    if (this.closed || texts.length === 0) return;
    if (texts.length === 1) return this.send(texts[0]!);
    const { socket } = this;
    const write = () => {
      for (const text of texts) socket.send(text, false);
    };
    if (socket.cork) socket.cork(write);
    else write();
    if (socket.bufferedAmount > SLOW_CONSUMER_BYTES) this.close(realtimeCloseCodes.slowConsumer, 'slow_consumer');
  }

  private cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    this.held = null;
    this.env.registry.remove(this);
    this.unwatch?.();
    this.attachment?.detach();
  }
}

function invalid(why: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: rpcCodes.invalidRequest, message: `Invalid Request: ${why}`, data: { error: 'invalid_request' } } } satisfies RpcResponse);
}

const PARSE_ERROR = JSON.stringify(parseErrorResponse());
const noMethods: ReadonlyMap<string, RpcMethodDefinition> = new Map();
/** What a request outside `auth` schedules after its reply: nothing (`auth` is the only one that does). */
const noSteps: Array<() => void> = [];

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';

/**
 * A success response as text, in one pass: the same bytes as `JSON.stringify({ jsonrpc, id, result })`
 * (an `undefined` result answers `null`). Throws where `JSON.stringify` of the result throws.
 */
export function resultResponse(id: RpcId, result: unknown): string {
  const value = result === 'pong' ? '"pong"' : (JSON.stringify(result) as string | undefined);
  return `{"jsonrpc":"2.0","id":${id === null ? 'null' : JSON.stringify(id)},"result":${value === undefined ? 'null' : value}}`;
}

function invalidParams(why: string): RpcError {
  return new RpcError(rpcCodes.invalidParams, `Invalid params: ${why}`, { error: 'invalid_params' });
}

/** `lastSeq` and `epoch` of the `auth` params: both or neither. */
function readResumePoint(p: Record<string, unknown>): ResumePoint | undefined {
  const hasSeq = p.lastSeq !== undefined && p.lastSeq !== null;
  const hasEpoch = p.epoch !== undefined && p.epoch !== null;
  if (!hasSeq && !hasEpoch) return undefined;
  if (!hasSeq || !hasEpoch) throw invalidParams('lastSeq and epoch go together (both from earlier pushes and the earlier auth result)');
  if (typeof p.lastSeq !== 'number' || !Number.isSafeInteger(p.lastSeq) || p.lastSeq < 0) throw invalidParams('lastSeq must be a non-negative integer');
  if (typeof p.epoch !== 'string' || p.epoch.length === 0 || p.epoch.length > 64) throw invalidParams('epoch must be the string from the earlier auth result');
  return { epoch: p.epoch, lastSeq: p.lastSeq };
}

const isAuth = (item: unknown): boolean => typeof item === 'object' && item !== null && (item as { method?: unknown }).method === 'auth';

function containsAuth(message: unknown): boolean {
  return Array.isArray(message) ? message.some(isAuth) : isAuth(message);
}
