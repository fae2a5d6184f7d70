import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { describeWithRedis } from '@trellis/test-support';
import { RedisRateLimiter } from '../src/index.js';

// Against a real Redis: counts are shared and atomic across connections (as across processes).
describeWithRedis('RedisRateLimiter', (url) => {
  const keyPrefix = `trellis-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const a = new RedisRateLimiter({ url, keyPrefix });
  const b = new RedisRateLimiter({ url, keyPrefix });
  const admin = new Redis(url);

  afterAll(async () => {
    const keys = await admin.keys(`${keyPrefix}*`);
    if (keys.length) await admin.del(...keys);
    await Promise.all([a.close(), b.close(), admin.quit()]);
  });

  it('lets exactly `limit` of many concurrent hits through, from two connections', async () => {
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).hit('burst', 20, 60_000)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.resetMs > 0 && d.resetMs <= 60_000)).toBe(true);
  });

  it('counts keys apart and reports what remains', async () => {
    expect(await a.hit('one', 3, 60_000)).toMatchObject({ allowed: true, remaining: 2 });
    expect(await b.hit('one', 3, 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await a.hit('two', 3, 60_000)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('starts a new window once the old one ends (windows are whole seconds)', async () => {
    expect((await a.hit('short', 1, 150)).allowed).toBe(true);
    const refused = await b.hit('short', 1, 150);
    expect(refused.allowed).toBe(false);
    expect(refused.resetMs).toBeGreaterThan(150);
    expect(refused.resetMs).toBeLessThanOrEqual(1000);
    await new Promise((resolve) => setTimeout(resolve, refused.resetMs + 50));
    expect((await a.hit('short', 1, 150)).allowed).toBe(true);
  });

  it('keeps one Redis key per limited key, named `${keyPrefix}${key}`, expiring with its window', async () => {
    await a.hit('named', 5, 60_000);
    expect(await admin.get(`${keyPrefix}named`)).toBe('1');
    const ttl = await admin.pttl(`${keyPrefix}named`);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('leaves a connection it was given open', async () => {
    const client = new Redis(url);
    const limiter = new RedisRateLimiter({ client, keyPrefix });
    await limiter.hit('given', 5, 1000);
    await limiter.close();
    expect(await client.ping()).toBe('PONG');
    await client.quit();
  });

  it('refuses a URL that is not redis://', () => {
    expect(() => new RedisRateLimiter({ url: 'http://127.0.0.1:6379' })).toThrow(/url must start with redis:\/\//);
  });
});
