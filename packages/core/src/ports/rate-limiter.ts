import type { ServiceIdentifier } from 'inversify';

export interface RateLimitDecision {
  /** Whether this hit is within the limit. */
  allowed: boolean;
  /** Hits left in the current window after this one (0 when refused). */
  remaining: number;
  /** Milliseconds until the current window ends and the count starts again. */
  resetMs: number;
}

/**
 * Counts hits per key in fixed windows: `hit(key, limit, windowMs)` records one hit and says
 * whether the key has made at most `limit` hits in the window that contains now. Windows start
 * at the first hit of a key. Implementations must count atomically (two processes hitting one
 * key never both see the last free slot).
 *
 * The embedded default counts in process; `@trellis/ratelimit-redis` shares counts between
 * processes through Redis.
 */
export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision>;
  close?(): Promise<void>;
}

export const rateLimiterServiceIdentifier: ServiceIdentifier<RateLimiter> = Symbol.for('@trellis/core/RateLimiter');

interface Window {
  count: number;
  resetAt: number;
}

/** Fixed-window counters in a Map; expired windows are swept as the map grows. */
export class InMemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, Window>();
  private nextSweep = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision> {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count++;
    const allowed = window.count <= limit;
    return { allowed, remaining: Math.max(0, limit - window.count), resetMs: window.resetAt - now };
  }

  async close(): Promise<void> {
    this.windows.clear();
  }

  private sweep(now: number): void {
    if (now < this.nextSweep && this.windows.size < this.maxKeys) return;
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
    // Under a flood of distinct keys, drop the oldest windows rather than grow without bound.
    if (this.windows.size >= this.maxKeys) {
      let excess = this.windows.size - Math.floor(this.maxKeys * 0.9);
      for (const key of this.windows.keys()) {
        if (excess-- <= 0) break;
        this.windows.delete(key);
      }
    }
    this.nextSweep = now + 60_000;
  }
}
