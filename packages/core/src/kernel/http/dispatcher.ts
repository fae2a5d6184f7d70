import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import { extractBearer, type Authenticator } from '../auth/authenticator.js';
import { hasPermission, type Permission, type Principal } from '../auth/principal.js';
import { insufficientScope, scopesAllow } from '../auth/scopes.js';
import type { KernelConfig } from '../config/config.js';
import { rpcCodeByKind, TrellisError, toTrellisError } from '../errors.js';
import { validateInput } from '../validation.js';
import { ClientAddressResolver } from './client-address.js';
import { guardInput } from './input-guard.js';
import { keepAliveFrame, withKeepAlive } from './keep-alive.js';
import type { RequestObservation, RequestObserver } from '../observability/request-observer.js';
import { oauthErrorBody } from './oauth-error-body.js';
import { openAiErrorBody } from './openai-error-body.js';
import { Reply } from './reply.js';
import { DispatchedRequestContext } from './request-context.js';
import { credentialRule, credentialRules, type CredentialOutcome } from './credential-rules.js';
import type { ErrorFormat, RequestContext, RouteDefinition } from './route.js';
import { Router } from './router.js';
import { isStreamBody, type KernelRequest, type KernelResponse } from './types.js';

export interface DispatcherDeps {
  config: KernelConfig;
  log: Logger;
  routes: readonly RouteDefinition[];
  authenticator(): Authenticator;
  fork(): EntityManager;
  get<T>(id: ServiceIdentifier<T>): T;
  isReady(): boolean;
  /** Access log, metrics and tracing (kernel/observability). */
  observer?: RequestObserver;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder('utf-8', { fatal: true });
const allowHeaders = 'authorization, content-type, x-api-key, x-request-id';
const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The one router every request goes through, whatever the transport: request id, CORS,
 * authentication and guards, parsing and validation, the handler, and the error shape.
 */
export class HttpDispatcher {
  readonly maxBodyBytes: number;
  readonly basePath: string;
  private readonly router = new Router<RouteDefinition>();
  private readonly corsOrigins: Set<string>;
  private readonly corsAny: boolean;
  private readonly idPrefix = Math.random().toString(36).slice(2, 10);
  private sequence = 0;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly streams = new Set<AbortController>();

  private readonly clientAddress: ClientAddressResolver;

  constructor(private readonly deps: DispatcherDeps) {
    this.maxBodyBytes = deps.config.server.maxBodyBytes;
    this.basePath = deps.config.server.basePath;
    this.corsOrigins = new Set(deps.config.server.corsOrigins);
    this.corsAny = this.corsOrigins.has('*');
    this.clientAddress = new ClientAddressResolver(deps.config.server.trustProxy, deps.config.server.trustedProxies);
    for (const route of deps.routes) this.router.add(route.method, route.path, route);
  }

  get activeRequests(): number {
    return this.inFlight;
  }

  /** The body limit of the route a request would reach, so a transport can refuse early. */
  bodyLimitFor(method: string, path: string): number {
    const found = this.router.find(method, this.stripBase(path) ?? path);
    return found && 'value' in found ? (found.value.maxBodyBytes ?? this.maxBodyBytes) : this.maxBodyBytes;
  }

  async handle(request: KernelRequest): Promise<KernelResponse> {
    const observation = this.deps.observer?.begin(request);
    this.inFlight++;
    let streaming = false;
    try {
      const response = observation ? await observation.run(() => this.dispatch(request, observation)) : await this.dispatch(request);
      if (isStreamBody(response.body)) {
        streaming = true;
        const keepAlive = this.deps.config.server.streamKeepAliveMs > 0 ? keepAliveFrame(response.headers['content-type']) : null;
        if (keepAlive) response.body = withKeepAlive<string | Uint8Array>(response.body, this.deps.config.server.streamKeepAliveMs, keepAlive);
        response.body = this.track(observation ? observation.stream(response, response.body) : response.body, request.signal);
      } else observation?.end(response);
      return response;
    } finally {
      if (!streaming) this.release();
    }
  }

  /** The 413 a transport sends when a body exceeds the limit, in the route's error shape. */
  payloadTooLarge(request: KernelRequest): KernelResponse {
    return this.refuse(request, new TrellisError('payload_too_large', 'payload_too_large', `The request body exceeds the limit of ${this.bodyLimitFor(request.method, request.path)} bytes.`));
  }

  /**
   * The route a request would reach, for a transport's admission control: its method and path as
   * declared (`/tool/vdb/:className/vector`), and whether it is always available (health checks).
   */
  routeKeyOf(request: KernelRequest): { key: string; alwaysAvailable: boolean } | undefined {
    const route = this.routeOf(request.method === 'HEAD' ? { ...request, method: 'GET' } : request);
    return route ? { key: `${route.method} ${route.path}`, alwaysAvailable: route.alwaysAvailable === true } : undefined;
  }

  /**
   * The 503 `overloaded` a transport sends when it refuses a request to protect the process (its
   * admission limits), in the route's error shape, with `Retry-After`.
   */
  overloaded(request: KernelRequest, message: string, retryAfterSeconds: number): KernelResponse {
    return this.refuse(request, new TrellisError('unavailable', 'overloaded', message, { expose: true, headers: { 'retry-after': String(retryAfterSeconds) } }));
  }

  /** An error answer a transport sends before dispatch (the request never reaches a handler), observed like any other. */
  private refuse(request: KernelRequest, error: TrellisError): KernelResponse {
    const route = this.routeOf(request);
    const response = this.errorResponse(request, error, this.requestId(request), route);
    const observation = this.deps.observer?.begin(request);
    if (route) observation?.matched(route);
    observation?.end(response);
    return response;
  }

  /** Resolves when no request or stream is in flight; aborts open streams after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => {
        for (const stream of this.streams) stream.abort();
        resolve(false);
      }, timeoutMs);
    });
    const drained = await Promise.race([idle, timeout]);
    clearTimeout(timer);
    return drained;
  }

  private release(): void {
    this.inFlight--;
    if (this.inFlight === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /**
   * Wraps a response stream so the request counts as in flight until the stream ends, is stopped
   * by the transport (`return()`, even before the first read), the client disconnects, or a
   * drain times out.
   */
  private track(body: AsyncIterable<string | Uint8Array>, signal?: AbortSignal): AsyncIterable<string | Uint8Array> {
    const controller = new AbortController();
    this.streams.add(controller);
    const inner = body[Symbol.asyncIterator]();
    let finished = false;
    const finish = async () => {
      if (finished) return;
      finished = true;
      this.streams.delete(controller);
      signal?.removeEventListener('abort', onAbort);
      this.release();
      await inner.return?.();
    };
    const onAbort = () => void finish();
    controller.signal.addEventListener('abort', onAbort, { once: true });
    signal?.addEventListener('abort', onAbort, { once: true });
    const iterator: AsyncIterator<string | Uint8Array> = {
      next: async () => {
        if (finished) return { done: true, value: undefined };
        try {
          const step = await inner.next();
          if (step.done) await finish();
          return finished && !step.done ? { done: true, value: undefined } : step;
        } catch (error) {
          await finish();
          throw error;
        }
      },
      return: async () => {
        await finish();
        return { done: true, value: undefined };
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }

  private requestId(request: KernelRequest): string {
    const incoming = request.headers['x-request-id'];
    if (incoming && requestIdPattern.test(incoming)) return incoming;
    return `${this.idPrefix}-${(++this.sequence).toString(36)}`;
  }

  private stripBase(path: string): string | null {
    if (!this.basePath) return path;
    if (path === this.basePath) return '/';
    return path.startsWith(`${this.basePath}/`) ? path.slice(this.basePath.length) : null;
  }

  private routeOf(request: KernelRequest): RouteDefinition | undefined {
    const path = this.stripBase(request.path);
    if (path === null) return undefined;
    const found = this.router.find(request.method, path);
    return found && 'value' in found ? found.value : undefined;
  }

  private async dispatch(request: KernelRequest, observation?: RequestObservation): Promise<KernelResponse> {
    const requestId = this.requestId(request);
    const path = this.stripBase(request.path);
    let route: RouteDefinition | undefined;
    try {
      if (path === null) throw new TrellisError('not_found', 'route_not_found', `No route matches ${request.method} ${request.path}.`);
      if (request.method === 'OPTIONS') return this.preflight(request, path, requestId);
      const found = this.router.find(request.method === 'HEAD' ? 'GET' : request.method, path);
      if (!found) throw new TrellisError('not_found', 'route_not_found', `No route matches ${request.method} ${path}.`);
      if ('allowed' in found) {
        throw new TrellisError('method_not_allowed', 'method_not_allowed', `${request.method} is not allowed on ${path}.`, {
          headers: { allow: found.allowed.join(', ') },
        });
      }
      route = found.value;
      observation?.matched(route);
      if (!route.alwaysAvailable && !this.deps.isReady()) throw new TrellisError('unavailable', 'not_ready', 'The server is starting or stopping.', { headers: { 'retry-after': '1' } });
      const response = await this.run(route, found.params, request, requestId, observation);
      this.applyCors(route, request, response.headers);
      return response;
    } catch (error) {
      return this.errorResponse(request, error, requestId, route);
    }
  }

  private async run(route: RouteDefinition, rawParams: Record<string, string>, request: KernelRequest, requestId: string, observation?: RequestObservation): Promise<KernelResponse> {
    const ip = this.clientIp(request);
    const userAgent = request.headers['user-agent'] ?? '';
    const { principal, refusal } = await this.authenticate(route, request, ip, userAgent);
    observation?.identified(principal);
    const failure = route.validationError;
    // Every untrusted value passes the edge guard (depth, NUL, lone surrogates, reserved keys)
    // before a DTO, a handler or the database sees it.
    // Both are guarded before any DTO runs, so hostile input answers 400 whatever fails first.
    guardInput(rawParams, 'params');
    const rawQuery = parseQuery(request.query);
    guardInput(rawQuery, 'query');
    // The body is parsed (and so guarded) before the path is validated, for the same reason.
    const rawBody = route.body ? this.parseBody(route, request) : undefined;
    if (rawBody !== undefined) guardInput(rawBody, 'body');
    // A path that does not name a well-formed resource names no resource: 404, not 422.
    const params = route.params ? await validateInput(route.params, rawParams, 'params', { status: 404, code: 'not_found' }) : rawParams;
    const lenient = { ignoreUnknown: route.unknownFields === 'ignore' };
    const query = route.query ? await validateInput(route.query, rawQuery, 'query', failure, lenient) : rawQuery;
    let body: unknown;
    if (route.body) {
      body = await validateInput(route.body, rawBody, 'body', failure, lenient);
    }

    const ctx: RequestContext = new DispatchedRequestContext(this.deps, request, requestId, params, query, body, principal, ip, userAgent, refusal);
    const result = await route.handler(ctx);
    const headers: Record<string, string> = { 'x-request-id': requestId };
    // Responses that carry a credential are never stored by a cache (RFC 9111 §5.2.2.5).
    if (route.noStore) Object.assign(headers, noStoreHeaders);
    if (result instanceof Reply) {
      Object.assign(headers, result.headers);
      if (result.kind === 'json') {
        headers['content-type'] = JSON_TYPE;
        return { status: result.status, headers, body: JSON.stringify(result.body) };
      }
      return { status: result.status, headers, body: (result.body as KernelResponse['body']) ?? null };
    }
    const status = route.response?.status ?? 200;
    if (result === undefined || status === 204) return { status: 204, headers, body: null };
    headers['content-type'] = JSON_TYPE;
    return { status, headers, body: JSON.stringify(result) };
  }

  /**
   * Applies the route's row of `credentialRules` (docs/http/README.md, "Credentials") to what the
   * request carries; permissions and `refuseImpersonation` then apply to an accepted credential.
   */
  private async authenticate(route: RouteDefinition, request: KernelRequest, ip: string, userAgent: string): Promise<{ principal: Principal | null; refusal: TrellisError | null }> {
    const rule = credentialRule(route.auth);
    if (!rule) return anonymous;
    const rules = credentialRules[rule.name];
    const token = extractBearer(request.headers);
    if (!token) return outcome(rules.absent, null, rule.kinds);
    // An invalid, expired or revoked token: the authenticator's 401 `invalid_token`, unless the row ignores it.
    const principal = await this.deps
      .authenticator()
      .authenticate(token, { ip, userAgent })
      .catch((error: unknown) => {
        if (rules.invalid === 'anonymous') return null;
        throw error;
      });
    if (!principal) return anonymous;
    if (!rule.kinds.includes(principal.kind)) return outcome(rules.otherKind, principal, rule.kinds);
    if (route.refuseImpersonation && principal.actorId) {
      throw new TrellisError('forbidden', 'impersonation_forbidden', 'Not allowed while an administrator acts as this user (become); use your own credentials.');
    }
    const required: readonly Permission[] = route.permission === undefined ? [] : typeof route.permission === 'string' ? [route.permission] : route.permission;
    for (const permission of required) {
      if (!hasPermission(principal, permission)) {
        throw new TrellisError('forbidden', 'permission_denied', `This operation needs the ${permission} permission.`);
      }
    }
    // A scoped credential needs one of the route's scopes or a full-access scope (RFC 6750 §3.1).
    const scopes = route.scopes ?? [];
    const fullAccess = this.deps.config.auth.fullAccessScopes;
    if (!scopesAllow(principal, scopes, fullAccess)) return outcome(rules.scopeShort, principal, rule.kinds, () => insufficientScope(scopes, fullAccess));
    return outcome(rules.accepted, principal, rule.kinds);
  }

  private parseBody(route: RouteDefinition, request: KernelRequest): unknown {
    const raw = request.body ?? EMPTY;
    if (raw.length === 0) return {};
    const limit = route.maxBodyBytes ?? this.maxBodyBytes;
    if (raw.length > limit) throw new TrellisError('payload_too_large', 'payload_too_large', `The request body exceeds the limit of ${limit} bytes.`);
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const accepted = route.bodyTypes ?? ['json'];
    let text: string;
    try {
      text = decoder.decode(raw);
    } catch {
      throw new TrellisError('bad_request', 'invalid_encoding', 'The request body is not valid UTF-8.');
    }
    if (accepted.includes('json') && (type === 'application/json' || type.endsWith('+json'))) {
      try {
        return JSON.parse(text);
      } catch (error) {
        throw new TrellisError('bad_request', 'invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
      }
    }
    if (accepted.includes('form') && type === 'application/x-www-form-urlencoded') {
      return parseQuery(text);
    }
    const expected = accepted.map((t) => (t === 'json' ? 'application/json' : 'application/x-www-form-urlencoded')).join(' or ');
    throw new TrellisError('unsupported_media_type', 'unsupported_media_type', `Send the body as ${expected}${type ? `, not ${type}` : ' with a Content-Type header'}.`);
  }

  private clientIp(request: KernelRequest): string {
    return this.clientAddress.resolve(request.remoteAddress, request.headers['x-forwarded-for']);
  }

  private allowedOrigin(route: RouteDefinition | undefined, origin: string | undefined): string | null {
    if (!origin) return null;
    if (route?.cors === 'any') return '*';
    if (this.corsAny || this.corsOrigins.has(origin)) return origin;
    return null;
  }

  private applyCors(route: RouteDefinition | undefined, request: KernelRequest, headers: Record<string, string>): void {
    const origin = request.headers['origin'];
    const allowed = this.allowedOrigin(route, origin);
    if (route?.cors === 'any') headers['access-control-allow-origin'] = '*';
    else if (allowed) {
      headers['access-control-allow-origin'] = allowed;
      headers['vary'] = 'Origin';
    }
    if (allowed || route?.cors === 'any') headers['access-control-expose-headers'] = 'x-request-id, www-authenticate, retry-after';
  }

  private preflight(request: KernelRequest, path: string, requestId: string): KernelResponse {
    const wanted = (request.headers['access-control-request-method'] ?? '').toUpperCase();
    const found = wanted ? this.router.find(wanted, path) : null;
    if (!found) throw new TrellisError('not_found', 'route_not_found', `No route matches ${wanted || 'OPTIONS'} ${path}.`);
    const route = 'value' in found ? found.value : undefined;
    const headers: Record<string, string> = { 'x-request-id': requestId };
    const allowed = this.allowedOrigin(route, request.headers['origin']);
    if (route && allowed) {
      headers['access-control-allow-origin'] = allowed;
      if (allowed !== '*') headers['vary'] = 'Origin';
      headers['access-control-allow-methods'] = route.method;
      headers['access-control-allow-headers'] = allowHeaders;
      headers['access-control-max-age'] = '600';
    }
    return { status: 204, headers, body: null };
  }

  errorResponse(request: KernelRequest, thrown: unknown, requestId: string, route?: RouteDefinition): KernelResponse {
    const error = toTrellisError(thrown);
    const status = error.status;
    // A refusal under load is counted (metrics, access log), not logged as a failure one by one.
    if (status >= 500 && error.code !== 'overloaded') {
      this.deps.log.error({ err: error.cause ?? error, reqId: requestId, method: request.method, path: request.path }, 'request failed');
    } else if (error.cause instanceof Error && !(error.cause instanceof TrellisError)) {
      // A database refusal turned into a 4xx: the input slipped past validation, worth a look.
      this.deps.log.warn({ err: error.cause, reqId: requestId, method: request.method, path: request.path, code: error.code }, 'request refused by the database');
    }
    const message = error.exposed ? error.message : `An internal error occurred (request ${requestId}).`;
    const format: ErrorFormat = route?.errorFormat ?? 'default';
    const extra = error.exposed ? error.extra : undefined;
    let body: Record<string, unknown>;
    if (format === 'oauth') body = oauthErrorBody(error, message);
    else if (format === 'billing') body = { success: false, error: error.code, message, ...extra };
    else if (format === 'openai') body = openAiErrorBody(error, message);
    else if (format === 'jsonrpc') body = { jsonrpc: '2.0', error: { code: rpcCodeByKind[error.kind], message, data: { error: error.code } }, id: null };
    else body = { error: error.code, message, ...(error.details ? { details: error.details } : {}), ...extra };
    const headers: Record<string, string> = { 'content-type': JSON_TYPE, 'x-request-id': requestId, ...error.headers };
    if (format === 'oauth') {
      headers['cache-control'] = 'no-store';
      headers['pragma'] = 'no-cache';
    }
    this.applyCors(route, request, headers);
    return { status, headers, body: JSON.stringify(body) };
  }
}

const noStoreHeaders = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;
const anonymous = { principal: null, refusal: null } as const;

/** Carries out one cell of `credentialRules`; `refusal` is the scope refusal of a credential whose scopes fall short. */
function outcome(
  what: Exclude<CredentialOutcome, 'invalid_token'>,
  principal: Principal | null,
  kinds: readonly string[],
  refusal?: () => TrellisError,
): { principal: Principal | null; refusal: TrellisError | null } {
  switch (what) {
    case 'anonymous':
      return anonymous;
    case 'principal':
      return { principal, refusal: null };
    case 'missing_credentials':
      throw new TrellisError('unauthenticated', 'missing_credentials', 'This operation needs a bearer token.', { headers: { 'www-authenticate': 'Bearer' } });
    case 'credential_not_allowed':
      throw new TrellisError('forbidden', 'credential_not_allowed', `This operation does not accept ${describeKind(principal?.kind ?? 'unknown')} credentials (accepted: ${kinds.map(describeKind).join(', ')}).`);
    case 'insufficient_scope':
      throw refusal!();
    case 'setAside':
      // Where anonymous callers pass, a credential whose scopes fall short does not make the
      // request worse than sending none: it runs as anonymous (a deployment token may admit it),
      // and the refusal answers where a credential is needed.
      return { principal: null, refusal: refusal!() };
  }
}

function describeKind(kind: string): string {
  return kind.replace('_', ' ');
}

/** Query string to object; a repeated key becomes an array. */
export function parseQuery(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!query) return out;
  for (const [key, value] of new URLSearchParams(query)) {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  }
  return out;
}
