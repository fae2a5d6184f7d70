import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import type { KernelConfig } from '../config/config.js';
import type { RouteDefinition } from '../http/route.js';
import type { KernelRequest, KernelResponse } from '../http/types.js';
import type { TrellisMetrics } from './metrics.js';
import { extractContext, tracer } from './tracing.js';

/** Route label for requests that matched no route (404, 405, foreign base path). */
export const unmatchedRoute = 'unmatched';

/**
 * Watches the requests of one dispatcher: an access log line, the HTTP metrics and a server span
 * per request. The dispatcher calls `begin` once per request and tells the observation what it
 * learns (route, principal) and when the response, or its stream, is over.
 */
export class RequestObserver {
  private readonly access: Logger;
  private readonly sampleRate: number;
  private readonly accessEnabled: boolean;

  constructor(
    log: Logger,
    config: Pick<KernelConfig, 'log'>,
    private readonly metrics: TrellisMetrics | undefined,
    private readonly basePath: string,
  ) {
    this.access = log.child({ kind: 'access' });
    this.accessEnabled = config.log.access.enabled && this.access.isLevelEnabled('info');
    this.sampleRate = config.log.access.sampleRate;
  }

  begin(request: KernelRequest): RequestObservation {
    return new RequestObservation(this, request);
  }

  /** @internal */
  finish(observation: RequestObservation, response: KernelResponse, bytes: number, failed: boolean): void {
    const seconds = Number(process.hrtime.bigint() - observation.started) / 1e9;
    const method = observation.request.method;
    const route = observation.route ? `${this.basePath}${observation.route.path}` : unmatchedRoute;
    const status = response.status;
    const labels = { method, route, status: String(status) };
    if (this.metrics) {
      this.metrics.httpRequests.inc(labels);
      this.metrics.httpDuration.observe(labels, seconds);
      this.metrics.httpResponseBytes.inc(labels, bytes);
    }
    const span = observation.span;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500 || failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    if (this.accessEnabled && (status >= 500 || this.sampleRate >= 1 || Math.random() < this.sampleRate)) {
      this.access.info(
        {
          method,
          route,
          status,
          durationMs: Math.round(seconds * 1e6) / 1e3,
          bytes,
          reqId: response.headers['x-request-id'],
          principalId: observation.principal?.userId ?? null,
          credential: observation.principal?.kind ?? null,
          ...(failed ? { aborted: true } : {}),
        },
        'request',
      );
    }
  }
}

export class RequestObservation {
  readonly started = process.hrtime.bigint();
  readonly span: Span;
  route: RouteDefinition | undefined;
  principal: Principal | null = null;
  private readonly context: Context;
  private done = false;

  constructor(
    private readonly observer: RequestObserver,
    readonly request: KernelRequest,
  ) {
    const parent = extractContext(request.headers);
    this.span = tracer().startSpan(
      request.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method } },
      parent,
    );
    this.context = trace.setSpan(parent, this.span);
  }

  /** Runs the dispatch with this request's span as the active one. */
  run<T>(work: () => Promise<T>): Promise<T> {
    return context.with(this.context, work);
  }

  matched(route: RouteDefinition): void {
    this.route = route;
    this.span.updateName(`${this.request.method} ${route.path}`);
    this.span.setAttribute('http.route', route.path);
  }

  identified(principal: Principal | null): void {
    this.principal = principal;
    if (principal) this.span.setAttribute('enduser.id', principal.userId);
  }

  /** A response with a complete body. */
  end(response: KernelResponse): void {
    if (this.done) return;
    this.done = true;
    const body = response.body;
    const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body instanceof Uint8Array ? body.byteLength : 0;
    this.observer.finish(this, response, bytes, false);
  }

  /** Wraps a streamed body: the observation ends when the stream does (finished, stopped or failed). */
  stream(response: KernelResponse, body: AsyncIterable<string | Uint8Array>): AsyncIterable<string | Uint8Array> {
    let bytes = 0;
    const finish = (failed: boolean) => {
      if (this.done) return;
      this.done = true;
      this.observer.finish(this, response, bytes, failed);
    };
    const inner = body[Symbol.asyncIterator]();
    const iterator: AsyncIterator<string | Uint8Array> = {
      next: async () => {
        try {
          const step = await inner.next();
          if (step.done) finish(false);
          else bytes += typeof step.value === 'string' ? Buffer.byteLength(step.value) : step.value.byteLength;
          return step;
        } catch (error) {
          finish(true);
          throw error;
        }
      },
      return: async (value?: unknown) => {
        finish(false);
        return (await inner.return?.(value)) ?? { done: true, value: undefined };
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }
}
