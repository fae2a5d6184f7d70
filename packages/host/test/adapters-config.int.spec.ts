import { ConfigError, InMemoryRateLimiter, InProcessPubSub, paymentProviderServiceIdentifier, pubSubServiceIdentifier, rateLimiterServiceIdentifier } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { createHost } from '@trellis/host';
import { StripePaymentProvider } from '@trellis/payments-stripe';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { PostgresRateLimiter } from '@trellis/ratelimit-postgres';
import { RedisRateLimiter } from '@trellis/ratelimit-redis';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { testRedisUrl } from '@trellis/test-support';

const redisUrl = testRedisUrl ?? '';
const base = { auth: { jwtSecret: 'k'.repeat(32) }, server: { host: '127.0.0.1', port: 0, transport: 'node' as const } };
const hostWith = (adapters: Record<string, unknown>) =>
  createHost({ config: { ...base, adapters }, database: sqliteDatabase({ path: ':memory:' }), logger: pino({ level: 'silent' }) });

// The reference host binds adapter packages from its `adapters` configuration section, so a
// self-hosted deployment switches to Redis or Stripe without code.
describe('adapters from configuration', () => {
  it('keeps the in-process defaults when nothing is configured', async () => {
    const host = hostWith({});
    await host.start();
    try {
      expect(host.kernel.get(pubSubServiceIdentifier)).toBeInstanceOf(InProcessPubSub);
      expect(host.kernel.get(rateLimiterServiceIdentifier)).toBeInstanceOf(InMemoryRateLimiter);
    } finally {
      await host.stop();
    }
  });

  it.skipIf(!testRedisUrl)('binds Redis pub/sub and rate limits that really span two hosts', async () => {
    const redisPrefix = `trellis-test-${process.pid}-${Date.now()}:`;
    const a = hostWith({ redisUrl, redisPrefix });
    const b = hostWith({ redisUrl, redisPrefix });
    await a.start();
    await b.start();
    try {
      const pubA = a.kernel.get(pubSubServiceIdentifier);
      const pubB = b.kernel.get(pubSubServiceIdentifier);
      expect(pubA).toBeInstanceOf(RedisPubSub);
      expect(a.kernel.get(rateLimiterServiceIdentifier)).toBeInstanceOf(RedisRateLimiter);
      let deliver!: (message: string) => void;
      const received = new Promise<string>((resolve) => (deliver = resolve));
      await pubB.subscribe('hello', (message) => deliver(String(message))); // resolves once live
      await pubA.publish('hello', 'from a');
      expect(await received).toBe('from a');

      const limiterA = a.kernel.get(rateLimiterServiceIdentifier);
      const limiterB = b.kernel.get(rateLimiterServiceIdentifier);
      expect((await limiterA.hit('k', 2, 60_000)).allowed).toBe(true);
      expect((await limiterB.hit('k', 2, 60_000)).allowed).toBe(true);
      expect((await limiterA.hit('k', 2, 60_000)).allowed).toBe(false);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it.skipIf(!testRedisUrl)('keeps in-process rate limits beside Redis pub/sub when rateLimit.store is memory', async () => {
    const host = hostWith({ redisUrl, redisPrefix: `trellis-test-${process.pid}-${Date.now()}:`, rateLimit: { store: 'memory' } });
    await host.start();
    try {
      expect(host.kernel.get(pubSubServiceIdentifier)).toBeInstanceOf(RedisPubSub);
      expect(host.kernel.get(rateLimiterServiceIdentifier)).toBeInstanceOf(InMemoryRateLimiter);
    } finally {
      await host.stop();
    }
  });

  it.skipIf(!process.env.TRELLIS_TEST_POSTGRES_URL)('binds PostgreSQL rate limits that span two hosts', async () => {
    const postgresUrl = process.env.TRELLIS_TEST_POSTGRES_URL!;
    const a = hostWith({ rateLimit: { store: 'postgres', postgresUrl } });
    const b = hostWith({ rateLimit: { store: 'postgres', postgresUrl } });
    await a.start();
    await b.start();
    const key = `adapters-config-${process.pid}-${Date.now()}`;
    try {
      const limiterA = a.kernel.get(rateLimiterServiceIdentifier);
      const limiterB = b.kernel.get(rateLimiterServiceIdentifier);
      expect(limiterA).toBeInstanceOf(PostgresRateLimiter);
      expect((await limiterA.hit(key, 2, 60_000)).allowed).toBe(true);
      expect((await limiterB.hit(key, 2, 60_000)).allowed).toBe(true);
      expect((await limiterA.hit(key, 2, 60_000)).allowed).toBe(false);
    } finally {
      await a.stop();
      await b.stop();
      const admin = new pg.Client({ connectionString: postgresUrl });
      await admin.connect();
      await admin.query('DELETE FROM trellis_rate_limits WHERE key = $1', [key]);
      await admin.end();
    }
  });

  it('names the missing store setting of rateLimit', () => {
    expect(() => hostWith({ rateLimit: { store: 'postgres' } })).toThrow(/adapters\.rateLimit\.postgresUrl: is required/);
    expect(() => hostWith({ rateLimit: { store: 'redis' } })).toThrow(/adapters\.redisUrl: is required when adapters\.rateLimit\.store is "redis"/);
    expect(() => hostWith({ rateLimit: { store: 'disk' } })).toThrow(/adapters\.rateLimit\.store/);
  });

  it('binds Stripe, and names each missing Stripe setting', async () => {
    const host = hostWith({ payments: { provider: 'stripe', stripe: { secretKey: 'sk_test_x', webhookSecret: 'whsec_x', successUrl: 'https://app.example/ok', cancelUrl: 'https://app.example/no' } } });
    await host.load(); // imports @trellis/payments-stripe, which the configuration names
    expect(host.kernel.get(paymentProviderServiceIdentifier)).toBeInstanceOf(StripePaymentProvider);
    await host.kernel.stop();

    let thrown: unknown;
    try {
      hostWith({ payments: { provider: 'stripe', stripe: { secretKey: 'sk_test_x' } } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).issues.map((i) => i.path).sort()).toEqual(['adapters.payments.stripe.cancelUrl', 'adapters.payments.stripe.successUrl', 'adapters.payments.stripe.webhookSecret']);
    expect(() => hostWith({ redisUrl: 'http://nope' })).toThrow(/adapters\.redisUrl/);
    expect(() => hostWith({ pubsub: 'redis' })).toThrow(/adapters\.pubsub: is not a known option/);
  });
});
