import type { ServiceIdentifier } from 'inversify';
import type { RateLimiterAbstract, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { lazyRequire } from '../kernel/lazy.js';

/**
 * rate-limiter-flexible (every store's limiter in one entry, ~36 modules) is required when the
 * first limiter is made (the first rate-limited request), not when the package is imported.
 */
const flexible = lazyRequire<{ RateLimiterMemory: typeof RateLimiterMemory; RateLimiterRes: typeof RateLimiterRes }>('rate-limiter-flexible');

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
 * at the first hit of a key and last whole seconds (`windowMs` is rounded up). Implementations
 * must count atomically (two processes hitting one key never both see the last free slot).
 *
 * Every implementation here is `rate-limiter-flexible` (see `FlexibleRateLimiter`): the embedded
 * default counts in process; `@trellis/ratelimit-redis` and `@trellis/ratelimit-postgres` share
 * counts between processes through Redis or PostgreSQL.
 */
export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision>;
  close?(): Promise<void>;
}

export const rateLimiterServiceIdentifier: ServiceIdentifier<RateLimiter> = Symbol.for('@trellis/core/RateLimiter');

/** Window lengths in whole seconds, as rate-limiter-flexible counts them (at least one second). */
export function windowSeconds(windowMs: number): number {
  return Math.max(1, Math.ceil(windowMs / 1000));
}

/**
 * The port on `rate-limiter-flexible`: one library limiter per (limit, window) pair, made on
 * first use by `create` and kept, each counting hits with its store's atomic increment. A hit
 * over the limit comes back from the library as a rejected `RateLimiterRes`, here as
 * `allowed: false`; any other rejection (the store is down) is thrown as it is.
 */
export abstract class FlexibleRateLimiter implements RateLimiter {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  /** A library limiter allowing `points` hits per `durationSeconds`. */
  protected abstract create(points: number, durationSeconds: number): RateLimiterAbstract;

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision> {
    const duration = windowSeconds(windowMs);
    const id = `${limit}/${duration}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      limiter = this.create(limit, duration);
      this.limiters.set(id, limiter);
    }
    try {
      const result = await limiter.consume(key);
      return { allowed: true, remaining: result.remainingPoints, resetMs: Math.max(0, result.msBeforeNext) };
    } catch (rejection) {
      if (rejection instanceof flexible().RateLimiterRes) return { allowed: false, remaining: 0, resetMs: Math.max(0, rejection.msBeforeNext) };
      throw rejection;
    }
  }

  async close(): Promise<void> {
    this.limiters.clear();
  }
}

/**
 * In-process counts (`RateLimiterMemory`): the embedded default. Each key's window is dropped
 * by a timer when it ends, so memory follows the number of keys active within one window.
 */
export class InMemoryRateLimiter extends FlexibleRateLimiter {
  protected create(points: number, duration: number): RateLimiterAbstract {
    return new (flexible().RateLimiterMemory)({ points, duration });
  }
}
