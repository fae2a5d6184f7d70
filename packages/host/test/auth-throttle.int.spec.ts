import { randomUUID } from 'node:crypto';
import { provide, rateLimiterServiceIdentifier } from '@trellis/core';
import { PostgresRateLimiter } from '@trellis/ratelimit-postgres';
import { RedisRateLimiter } from '@trellis/ratelimit-redis';
import pg from 'pg';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const password = 'correct horse battery';
let counter = 0;
const email = () => `throttle${++counter}-${process.pid}-${randomUUID().slice(0, 8)}@example.com`;
const from = (address: string) => ({ 'x-forwarded-for': address });

// Login and registration are throttled per client address and per account (429 + Retry-After),
// before any password is hashed. The address is the rightmost untrusted X-Forwarded-For hop.
describe.each(testDatabases())('login and registration throttling on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport, {
        config: {
          server: { trustProxy: true, trustedProxies: ['127.0.0.1', '::1'] },
          auth: { rateLimit: { perIp: 5, perAccount: 3, windowSeconds: 120 } },
        },
      });
    });
    afterAll(() => t?.close());

    const login = (body: { email: string; password: string }, address: string) => t.request('POST', '/auth/login', { body, headers: from(address) });
    const register = (body: { email: string; password: string }, address: string) => t.request('POST', '/auth/register', { body, headers: from(address) });

    it('limits login attempts per account across addresses, even with the right password', async () => {
      const account = email();
      expect((await register({ email: account, password }, '198.51.100.1')).status).toBe(201);
      for (let i = 0; i < 3; i++) expect((await login({ email: account, password: 'wrong password!' }, `203.0.113.${10 + i}`)).status).toBe(401);
      const limited = await login({ email: account.toUpperCase(), password }, '203.0.113.20');
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ error: 'too_many_attempts' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // Another account from the same address is not affected.
      const other = email();
      expect((await register({ email: other, password }, '198.51.100.2')).status).toBe(201);
      expect((await login({ email: other, password }, '203.0.113.20')).status).toBe(200);
    });

    it('limits login attempts per client address, taken from the rightmost untrusted hop', async () => {
      const real = `192.0.2.${++counter % 250}`;
      // The client writes a fresh leftmost entry each time; the proxy appends the real address.
      for (let i = 0; i < 5; i++) {
        const response = await login({ email: email(), password }, `10.${i}.0.1, ${real}`);
        expect(response.status).toBe(401);
      }
      const limited = await login({ email: email(), password }, `10.9.9.9, ${real}`);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await login({ email: email(), password }, '192.0.2.251')).status).toBe(401);
    });

    it('limits registrations per client address and per email', async () => {
      const address = '198.51.100.99';
      for (let i = 0; i < 5; i++) expect((await register({ email: email(), password }, address)).status).toBe(201);
      const limited = await register({ email: email(), password }, address);
      expect(limited.status).toBe(429);
      expect(limited.body.error).toBe('too_many_attempts');
      // Probing one email (email_taken) is limited per account.
      const taken = email();
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await register({ email: taken, password }, `198.51.101.${i}`)).status);
      expect(statuses).toEqual([201, 409, 409, 429]);
    });
  });
});

// Two hosts sharing Redis count together: attempts split between them hit one limit.
describe.each(testDatabases())('login throttling across hosts through Redis on $name', (db) => {
  let a: TestHost;
  let b: TestHost;
  const keyPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
  beforeAll(async () => {
    const start = (transport: 'uws' | 'node') =>
      startTestHost(db, transport, {
        adapters: [provide(rateLimiterServiceIdentifier, new RedisRateLimiter({ url: redisUrl, keyPrefix }))],
        config: { auth: { rateLimit: { perIp: 1000, perAccount: 4, windowSeconds: 120 } } },
      });
    a = await start('uws');
    b = await start('node');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('refuses the fifth attempt on one account, wherever the attempts landed', async () => {
    const account = email();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await (i % 2 ? b : a).request('POST', '/auth/login', { body: { email: account, password } })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
  });
});

// The same with the counts in PostgreSQL (a table of its own in the test server's database).
const postgresUrl = process.env.TRELLIS_TEST_POSTGRES_URL;
describe.skipIf(!postgresUrl)('login throttling across hosts through PostgreSQL', () => {
  let a: TestHost;
  let b: TestHost;
  const tableName = `rate_limits_t_${process.pid}_${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    const start = (transport: 'uws' | 'node') =>
      startTestHost(testDatabases()[0]!, transport, {
        adapters: [provide(rateLimiterServiceIdentifier, new PostgresRateLimiter({ url: postgresUrl!, tableName }))],
        config: { auth: { rateLimit: { perIp: 1000, perAccount: 4, windowSeconds: 120 } } },
      });
    a = await start('uws');
    b = await start('node');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`DROP TABLE IF EXISTS "${tableName}"`);
    await admin.end();
  });

  it('refuses the fifth attempt on one account with 429 and Retry-After, wherever the attempts landed', async () => {
    const account = email();
    const responses = [];
    for (let i = 0; i < 5; i++) responses.push(await (i % 2 ? b : a).request('POST', '/auth/login', { body: { email: account, password } }));
    expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 401, 429]);
    const retryAfter = Number(responses[4]!.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(120);
  });
});
