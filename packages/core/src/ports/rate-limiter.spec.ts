import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InMemoryRateLimiter, windowSeconds } from './rate-limiter.js';

describe('InMemoryRateLimiter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('allows `limit` hits per key and window, then refuses until the window ends', async () => {
    const limiter = new InMemoryRateLimiter();
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 1, resetMs: 1000 });
    vi.advanceTimersByTime(400);
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 0, resetMs: 600 });
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: false, remaining: 0, resetMs: 600 });
    expect((await limiter.hit('other', 2, 1000)).allowed).toBe(true);
    vi.advanceTimersByTime(600);
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 1, resetMs: 1000 });
  });

  it('lets exactly `limit` of many concurrent hits through', async () => {
    const limiter = new InMemoryRateLimiter();
    const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.hit('burst', 7, 60_000)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(7);
  });

  it('counts windows in whole seconds', async () => {
    expect([windowSeconds(1), windowSeconds(1000), windowSeconds(1001), windowSeconds(60_000)]).toEqual([1, 1, 2, 60]);
    const limiter = new InMemoryRateLimiter();
    expect(await limiter.hit('short', 1, 150)).toEqual({ allowed: true, remaining: 0, resetMs: 1000 });
  });

  it('forgets a key once its window ends', async () => {
    const limiter = new InMemoryRateLimiter();
    for (let i = 0; i < 1000; i++) await limiter.hit(`key-${i}`, 1, 60_000);
    const stored = () => {
      const limiters = (limiter as unknown as { limiters: Map<string, { _memoryStorage: { _storage: Map<string, unknown> } }> }).limiters;
      return [...limiters.values()].reduce((sum, l) => sum + l._memoryStorage._storage.size, 0);
    };
    expect(stored()).toBe(1000);
    vi.advanceTimersByTime(60_001);
    expect(stored()).toBe(0);
  });
});
