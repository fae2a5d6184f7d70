import { Redis, type RedisOptions } from 'ioredis';
import { FlexibleRateLimiter } from '@trellis/core';
import { RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface RedisRateLimiterOptions {
  /** `redis://[:password@]host:port[/db]`; ignored when `client` is given. Default `redis://127.0.0.1:6379`. */
  url?: string;
  /** An existing connection to use; it is left open by `close()`. */
  client?: Redis;
  /** Extra ioredis options when this adapter opens its own connection. */
  redis?: RedisOptions;
  /** Prefix of every key (default `trellis:ratelimit:`; a trailing `:` is added when missing), so several deployments can share one Redis. */
  keyPrefix?: string;
}

/**
 * The RateLimiter port on Redis through `rate-limiter-flexible`'s `RateLimiterRedis`: each hit
 * is one Lua script (count, start the window on the first hit, report the time left), so every
 * host process behind a load balancer shares the same counts and no two hits can take the last
 * free slot. Keys are `${keyPrefix}${key}`. Bind it in place of the in-process default:
 *
 *   createHost({ adapters: [provide(rateLimiterServiceIdentifier, new RedisRateLimiter({ url }))] })
 */
export class RedisRateLimiter extends FlexibleRateLimiter {
  private readonly redis: Redis;
  private readonly owned: boolean;
  private readonly prefix: string;

  constructor(options: RedisRateLimiterOptions = {}) {
    super();
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

  protected create(points: number, duration: number): RateLimiterAbstract {
    // The library joins its prefix and the key with `:`; the prefix's own trailing `:` stands in
    // for it, so keys stay `${keyPrefix}${key}`.
    const keyPrefix = this.prefix.endsWith(':') ? this.prefix.slice(0, -1) : this.prefix;
    return new RateLimiterRedis({ storeClient: this.redis, points, duration, keyPrefix });
  }

  override async close(): Promise<void> {
    await super.close();
    if (this.owned) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
