import { describe, expect, it } from 'vitest';
import { InMemoryRateLimiter } from './rate-limiter.js';

describe('InMemoryRateLimiter', () => {
  it('allows `limit` hits per key and window, then refuses until the window ends', async () => {
    let now = 1_000;
    const limiter = new InMemoryRateLimiter(() => now);
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 1, resetMs: 1000 });
    now += 400;
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 0, resetMs: 600 });
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: false, remaining: 0, resetMs: 600 });
    expect((await limiter.hit('other', 2, 1000)).allowed).toBe(true);
    now += 600;
    expect(await limiter.hit('k', 2, 1000)).toEqual({ allowed: true, remaining: 1, resetMs: 1000 });
  });

  it('stays bounded under a flood of distinct keys', async () => {
    const limiter = new InMemoryRateLimiter(() => 0, 100);
    for (let i = 0; i < 1000; i++) await limiter.hit(`key-${i}`, 1, 60_000);
    expect((limiter as unknown as { windows: Map<string, unknown> }).windows.size).toBeLessThanOrEqual(100);
  });
});
