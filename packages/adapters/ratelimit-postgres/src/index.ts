import { FlexibleRateLimiter } from '@trellis/core';
import pg from 'pg';
import { RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface PostgresRateLimiterOptions {
  /** `postgres://user:password@host:port/database`; ignored when `pool` is given. */
  url?: string;
  /** An existing `pg` pool to use; it is left open by `close()`. */
  pool?: pg.Pool;
  /** Size of the pool this adapter opens (default 4). */
  poolSize?: number;
  /** Table holding the counts (default `trellis_rate_limits`); created when missing. */
  tableName?: string;
  /** Schema of the table (default: the connection's search path). */
  schemaName?: string;
  /** Prefix of every key (default none), so several deployments can share one table. */
  keyPrefix?: string;
  /** How often rows of ended windows are deleted, in ms (default 5 minutes). */
  sweepIntervalMs?: number;
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * The RateLimiter port on PostgreSQL through `rate-limiter-flexible`'s `RateLimiterPostgres`:
 * each hit is one `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` on the key's row, which
 * PostgreSQL runs atomically, so every host process using the database shares the same counts
 * and no two hits can take the last free slot. For deployments that have PostgreSQL but no Redis:
 *
 *   createHost({ adapters: [provide(rateLimiterServiceIdentifier, new PostgresRateLimiter({ url }))] })
 *
 * The table (`key text primary key, points integer, expire bigint` — the library's layout, with
 * keys of any length) is created on first use; rows of ended windows are deleted periodically.
 */
/** SQLSTATEs of a `CREATE TABLE IF NOT EXISTS` that lost a race with another one (see `createTable`). */
const RACE_CODES = new Set(['23505', '42P07', '42710']);

export class PostgresRateLimiter extends FlexibleRateLimiter {
  private readonly pool: pg.Pool;
  private readonly owned: boolean;
  private readonly table: string;
  private readonly keyPrefix: string;
  private ready?: Promise<void>;
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly options: PostgresRateLimiterOptions = {}) {
    super();
    PostgresRateLimiter.checkOptions(options);
    this.owned = !options.pool;
    this.pool = options.pool ?? new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 4 });
    // An idle connection that fails (the server restarts) must not take the process down.
    if (this.owned) this.pool.on('error', () => {});
    const name = options.tableName ?? 'trellis_rate_limits';
    this.table = options.schemaName ? `"${options.schemaName}"."${name}"` : `"${name}"`;
    this.keyPrefix = options.keyPrefix ?? '';
  }

  /** Refuses options that cannot work, with a message naming the option. */
  static checkOptions(options: PostgresRateLimiterOptions): void {
    if (!options.pool && (typeof options.url !== 'string' || !/^postgres(ql)?:\/\//.test(options.url))) {
      throw new Error(`PostgresRateLimiter: url must be a postgres:// URL (or pass a pool), got ${JSON.stringify(options.url)}`);
    }
    for (const name of ['tableName', 'schemaName'] as const) {
      const value = options[name];
      if (value !== undefined && !identifier.test(value)) throw new Error(`PostgresRateLimiter: ${name} must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(value)}`);
    }
    if (options.poolSize !== undefined && !(Number.isInteger(options.poolSize) && options.poolSize > 0)) throw new Error('PostgresRateLimiter: poolSize must be a positive integer');
  }

  override async hit(key: string, limit: number, windowMs: number) {
    await (this.ready ??= this.createTable());
    return super.hit(key, limit, windowMs);
  }

  protected create(points: number, duration: number): RateLimiterAbstract {
    return new RateLimiterPostgres({
      storeClient: this.pool,
      storeType: 'pool',
      tableName: this.options.tableName ?? 'trellis_rate_limits',
      schemaName: this.options.schemaName,
      // The library joins a non-empty prefix and the key with `:`.
      keyPrefix: this.keyPrefix.endsWith(':') ? this.keyPrefix.slice(0, -1) : this.keyPrefix,
      points,
      duration,
      tableCreated: true,
      clearExpiredByTimeout: false,
    });
  }

  /** Deletes the rows of windows that have ended (also done periodically). */
  async sweep(): Promise<number> {
    const result = await this.pool.query(`DELETE FROM ${this.table} WHERE expire < $1`, [Date.now()]);
    return result.rowCount ?? 0;
  }

  override async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.ready?.catch(() => {});
    await super.close();
    if (this.owned) await this.pool.end();
  }

  private async createTable(): Promise<void> {
    const create = `CREATE TABLE IF NOT EXISTS ${this.table} (key text PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`;
    try {
      await this.pool.query(create);
    } catch (error) {
      // Two processes creating the table at once: the one that loses sees the other's catalog
      // rows as a duplicate (23505 on pg_type, 42P07 "relation exists", or 42710 "type exists",
      // depending on when it looked). The other's table is committed by then, so the statement
      // again finds it and does nothing; a name held by something else fails again, and says so.
      if (!RACE_CODES.has((error as { code?: string }).code ?? '')) {
        this.ready = undefined;
        throw error;
      }
      try {
        await this.pool.query(create);
      } catch (again) {
        this.ready = undefined;
        throw again;
      }
    }
    this.sweeper = setInterval(() => void this.sweep().catch(() => {}), this.options.sweepIntervalMs ?? 300_000);
    this.sweeper.unref();
  }
}
