import { Redis, type RedisOptions } from 'ioredis';
import type { RateLimitDecision, RateLimiter } from '@trellis/core';

export interface RedisRateLimiterOptions {
  /** `redis://[:password@]host:port[/db]`; ignored when `client` is given. Default `redis://127.0.0.1:6379`. */
  url?: string;
  /** An existing connection to use; it is left open by `close()`. */
  client?: Redis;
  /** Extra ioredis options when this adapter opens its own connection. */
  redis?: RedisOptions;
  /** Prefix of every key (default `trellis:ratelimit:`), so several deployments can share one Redis. */
  keyPrefix?: string;
}

/**
 * One atomic step per hit: count, start the window on the first hit, and report the count and
 * the time left. A key whose expiry was lost (a failover) gets one again rather than living forever.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { count, ttl }
`;

/**
 * The RateLimiter port on Redis: fixed windows counted with one Lua script per hit, so every
 * host process behind a load balancer shares the same counts and no two hits can take the last
 * free slot. Bind it in place of the in-process default:
 *
 *   createHost({ adapters: [provide(rateLimiterServiceIdentifier, new RedisRateLimiter({ url }))] })
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly owned: boolean;
  private readonly prefix: string;

  constructor(options: RedisRateLimiterOptions = {}) {
    RedisRateLimiter.checkOptions(options);
    this.owned = !options.client;
    this.redis = options.client ?? new Redis(options.url ?? 'redis://127.0.0.1:6379', { lazyConnect: false, maxRetriesPerRequest: 2, ...options.redis });
    this.prefix = options.keyPrefix ?? 'trellis:ratelimit:';
  }

  /** Refuses options that cannot work, with a message naming the option. */
  static checkOptions(options: RedisRateLimiterOptions): void {
    if (options.url !== undefined && !/^rediss?:\/\//.test(options.url)) {
      throw new Error(`RedisRateLimiter: url must start with redis:// or rediss://, got ${JSON.stringify(options.url)}`);
    }
    if (options.keyPrefix !== undefined && options.keyPrefix.length === 0) throw new Error('RedisRateLimiter: keyPrefix must not be empty');
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision> {
    const [count, ttl] = (await this.redis.eval(HIT_SCRIPT, 1, `${this.prefix}${key}`, String(windowMs))) as [number, number];
    return { allowed: count <= limit, remaining: Math.max(0, limit - count), resetMs: Math.max(0, ttl) };
  }

  async close(): Promise<void> {
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
