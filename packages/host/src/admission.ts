import type { Kernel, KernelRequest, KernelResponse } from '@trellis/core';

/** How often the event loop's delay is sampled. */
export const LOOP_SAMPLE_MS = 50;
/** At most one "shedding load" warning per this many milliseconds. */
const WARN_EVERY_MS = 10_000;

export interface AdmissionLimits {
  maxInFlight: number;
  maxEventLoopDelayMs: number;
  routes: Record<string, number>;
  retryAfterSeconds: number;
}

/**
 * Admission control of one process (`server.admission`): a request is worked on only while
 * fewer than `maxInFlight` are (and fewer than its route's own limit), and while the event loop
 * keeps up; otherwise it is answered at once with 503 `overloaded` and `Retry-After`. Refusing
 * early keeps the latency of the admitted requests bounded when more is offered than the process
 * can serve: a queue without bound would only make every answer late, then time out.
 * Routes marked always available (health, readiness, metrics) are never refused.
 */
export class Admission {
  private inFlight = 0;
  private readonly perRoute = new Map<string, number>();
  private loopDelayMs = 0;
  private sampler: NodeJS.Timeout | undefined;
  private refusedSinceWarning = 0;
  private lastWarningAt = 0;
  readonly enabled: boolean;
  private readonly hasRouteLimits: boolean;

  constructor(
    private readonly kernel: Kernel,
    private readonly limits: AdmissionLimits = kernel.config.server.admission,
  ) {
    this.hasRouteLimits = Object.keys(limits.routes).length > 0;
    this.enabled = limits.maxInFlight > 0 || limits.maxEventLoopDelayMs > 0 || this.hasRouteLimits;
    if (limits.maxEventLoopDelayMs > 0) this.sampleLoop();
  }

  /** Requests being worked on now (admitted, answer not ready yet). */
  get active(): number {
    return this.inFlight;
  }

  /** Runs `handle` if the request is admitted, else answers the 503. */
  async run(request: KernelRequest, handle: () => Promise<KernelResponse>): Promise<KernelResponse> {
    if (!this.enabled) return handle();
    const limits = this.limits;
    const overFull = limits.maxInFlight > 0 && this.inFlight >= limits.maxInFlight;
    const late = limits.maxEventLoopDelayMs > 0 && this.loopDelayMs > limits.maxEventLoopDelayMs;
    // The route is looked up only when it matters: a refusal (health checks pass) or per-route limits.
    const route = overFull || late || this.hasRouteLimits ? this.kernel.http.routeKeyOf(request) : undefined;
    if (route?.alwaysAvailable) return handle();
    const routeLimit = route ? limits.routes[route.key] : undefined;
    const routeCount = route && routeLimit !== undefined ? (this.perRoute.get(route.key) ?? 0) : 0;
    if (overFull || late || (routeLimit !== undefined && routeCount >= routeLimit)) {
      const reason = overFull
        ? `The server is working on ${this.inFlight} requests, its limit; retry after ${limits.retryAfterSeconds} s.`
        : late
          ? `The server is running ${Math.round(this.loopDelayMs)} ms behind; retry after ${limits.retryAfterSeconds} s.`
          : `The server is working on ${routeCount} requests of ${route!.key}, that route's limit; retry after ${limits.retryAfterSeconds} s.`;
      this.noteRefusal(reason);
      return this.kernel.http.overloaded(request, reason, limits.retryAfterSeconds);
    }
    this.inFlight++;
    if (routeLimit !== undefined) this.perRoute.set(route!.key, routeCount + 1);
    try {
      return await handle();
    } finally {
      this.inFlight--;
      if (routeLimit !== undefined) {
        const left = (this.perRoute.get(route!.key) ?? 1) - 1;
        if (left > 0) this.perRoute.set(route!.key, left);
        else this.perRoute.delete(route!.key);
      }
    }
  }

  /** Stops sampling the event loop. */
  close(): void {
    if (this.sampler) clearTimeout(this.sampler);
    this.sampler = undefined;
  }

  private sampleLoop(): void {
    let expected = performance.now() + LOOP_SAMPLE_MS;
    let previous = 0;
    const tick = () => {
      const now = performance.now();
      const delay = Math.max(0, now - expected);
      // Sustained lateness only: one long task (a module import, a large JSON) is not overload.
      this.loopDelayMs = Math.min(delay, previous);
      previous = delay;
      expected = now + LOOP_SAMPLE_MS;
      this.sampler = setTimeout(tick, LOOP_SAMPLE_MS);
      this.sampler.unref();
    };
    this.sampler = setTimeout(tick, LOOP_SAMPLE_MS);
    this.sampler.unref();
  }

  private noteRefusal(reason: string): void {
    this.refusedSinceWarning++;
    const now = Date.now();
    if (now - this.lastWarningAt < WARN_EVERY_MS) return;
    this.kernel.log.warn({ refused: this.refusedSinceWarning, inFlight: this.inFlight, eventLoopDelayMs: Math.round(this.loopDelayMs) }, `shedding load: ${reason}`);
    this.lastWarningAt = now;
    this.refusedSinceWarning = 0;
  }
}
