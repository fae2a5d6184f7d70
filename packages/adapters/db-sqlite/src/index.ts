import { Migration, Migrator } from '@mikro-orm/migrations';
import type { Options } from '@mikro-orm/core';
import { EntityManager as SqliteEntityManager, SqliteDriver } from '@mikro-orm/sqlite';
import { toMigrationEntries, type DatabaseAdapter } from '@trellis/core';
import { knexClient, knexPoolStats, mergeCommittedFork, withoutAsyncFlushContext, type EntityManagerClass } from '@trellis/db-mikro-orm';
import { SqliteRunStore } from './run-store.js';
import { finalizeKeptStatements, sqliteStatements, type SqliteDriverName } from './statements.js';

export { SqliteRunStore } from './run-store.js';
export type { SqliteDriverName } from './statements.js';

export interface SqliteDatabaseOptions {
  /** File path, or `:memory:` for a private in-memory database. Default `./trellis.db`. */
  path?: string;
  /** Milliseconds a writer waits for the lock before failing (default 5000). */
  busyTimeoutMs?: number;
  /**
   * `full` (default): every commit is on disk before it is acknowledged, so an acknowledged write
   * survives a power loss or an OS crash. `normal`: faster commits in WAL mode; a process crash
   * loses nothing, but a power loss or OS crash may roll back the last commits.
   */
  synchronous?: 'full' | 'normal';
  /**
   * `sqlite3` (default): the asynchronous driver; statements, and the fsync of each commit, run on
   * libuv's thread pool while the event loop keeps serving. `better-sqlite3`: the synchronous
   * driver; a statement runs on the calling thread with no thread-pool round trip (less CPU per
   * statement), but a commit's fsync (`synchronous=FULL`) and any wait for the write lock hold the
   * event loop. See docs/adapters.md for the measurements behind the default.
   */
  driver?: SqliteDriverName;
}

/** The package that brings `better-sqlite3`: an optional peer dependency, installed by whoever picks that driver. */
export const betterSqlitePackage = '@mikro-orm/better-sqlite';

/**
 * `driver: 'better-sqlite3'` on an installation without its optional package. The message says
 * which command adds it (docs/adapters.md, "The SQLite drivers").
 */
export class SqliteDriverNotInstalledError extends Error {
  override readonly name = 'SqliteDriverNotInstalledError';
  readonly code = 'adapter_not_installed';
  constructor(options?: { cause?: unknown }) {
    super(
      `The SQLite driver better-sqlite3 is optional and not installed. Add it next to @trellis/db-sqlite: npm install ${betterSqlitePackage}@6.6.16 (which brings better-sqlite3; or drop ?driver=better-sqlite3 to use the default sqlite3 driver).`,
      options,
    );
  }
}

/** MikroORM's driver and its entity manager class. */
interface LoadedDriver {
  driver: Options['driver'];
  entityManager: EntityManagerClass;
}

/** Imports MikroORM's better-sqlite3 driver, or throws SqliteDriverNotInstalledError. */
async function importBetterSqliteDriver(): Promise<LoadedDriver> {
  try {
    const loaded = await import('@mikro-orm/better-sqlite');
    return { driver: loaded.BetterSqliteDriver, entityManager: loaded.EntityManager as unknown as EntityManagerClass };
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    const missing = (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') && typeof e.message === 'string' && /['"](@mikro-orm\/better-sqlite|better-sqlite3)['"]/.test(e.message);
    if (missing) throw new SqliteDriverNotInstalledError({ cause: error });
    throw error;
  }
}

/** knex's `_query(connection, query)` of its SQLite dialect: runs one statement on a raw connection. */
type KnexQuery = (this: { driverName?: string }, connection: object, query: { sql: string; bindings?: unknown[]; response?: unknown; context?: unknown }) => Promise<unknown>;
/** The prototype of MikroORM's SQLite dialect of knex (every client of that dialect, and the clients of its transactions). */
type KnexDialect = { _query?: KnexQuery; [execPatched]?: true };
const execPatched = Symbol('trellis.execTransactionControl');

/** The statements knex sends to begin, commit and roll back a transaction or a savepoint. */
const TRANSACTION_CONTROL = /^(?:BEGIN;|COMMIT;|ROLLBACK|SAVEPOINT \w+;|RELEASE SAVEPOINT \w+;|ROLLBACK TO SAVEPOINT \w+)$/;

/**
 * Makes the dialect run a transaction's control statements on a `sqlite3` connection through its
 * `exec`. knex sends them through `Database#all`, which prepares a statement, runs it and
 * finalizes it: three trips to the thread pool, each a wake-up of the event loop on its way back
 * (about 120 µs of this thread and 210 µs of wall time a statement, measured on a 2-core VM).
 * `exec` is one trip (about 45 and 100). A write transaction has two of them, and a streamed run
 * several transactions. Everything else, and every other driver, goes to knex as before.
 *
 * It is the dialect's prototype that changes, once per process: knex makes the client of each
 * transaction from the dialect's prototype, not from the ORM's client.
 */
function execTransactionControl(dialect: KnexDialect): void {
  const query = dialect._query;
  if (!query || dialect[execPatched]) return;
  dialect[execPatched] = true;
  dialect._query = function (connection, obj) {
    const exec = (connection as { exec?: (sql: string, callback: (error: Error | null) => void) => void }).exec;
    if (this.driverName !== 'sqlite3' || !exec || (obj.bindings && obj.bindings.length > 0) || !TRANSACTION_CONTROL.test(obj.sql)) return query.call(this, connection, obj);
    return new Promise((resolve, reject) => {
      exec.call(connection, obj.sql, (error) => {
        if (error) return reject(error);
        // What `all` gives for a statement with no rows: knex reads nothing else of these.
        obj.response = [];
        obj.context = {};
        resolve(obj);
      });
    });
  };
}

/**
 * The embedded default database: one SQLite file (or memory), WAL journal with `synchronous=FULL`
 * (unless `synchronous: 'normal'`), foreign keys on, and a busy timeout so concurrent writers wait
 * instead of failing. One connection: SQLite serialises
 * writers anyway, and a `:memory:` database exists per connection.
 */
export function sqliteDatabase(options: SqliteDatabaseOptions = {}): DatabaseAdapter {
  const path = options.path ?? './trellis.db';
  const memory = path === ':memory:';
  const driver = options.driver ?? 'sqlite3';
  // better-sqlite3 is an optional peer dependency: imported at prepare() when it is the driver.
  let betterSqliteDriver: LoadedDriver | undefined;
  return {
    dialect: 'sqlite',
    description: `sqlite:${path}`,
    async prepare() {
      if (driver === 'better-sqlite3') betterSqliteDriver ??= await importBetterSqliteDriver();
    },
    ormOptions(migrations): Options {
      if (driver === 'better-sqlite3' && !betterSqliteDriver) throw new Error('The better-sqlite3 driver is not loaded yet: await database.prepare() first (the kernel does).');
      const loaded: LoadedDriver = driver === 'sqlite3' ? { driver: SqliteDriver, entityManager: SqliteEntityManager as unknown as EntityManagerClass } : betterSqliteDriver!;
      return {
        driver: loaded.driver,
        // The driver's entity manager, with a flush that enters no async context (see @trellis/db-mikro-orm).
        entityManager: withoutAsyncFlushContext(loaded.entityManager) as unknown as Options['entityManager'],
        dbName: path,
        extensions: [Migrator],
        pool: { min: 1, max: 1 },
        migrations: {
          migrationsList: toMigrationEntries(migrations, 'sqlite', Migration) as never,
          transactional: true,
          allOrNothing: true,
          snapshot: false,
          tableName: 'trellis_migrations',
        },
      };
    },
    async afterConnect(orm) {
      if (driver === 'sqlite3') {
        // The kept prepared statements are finalized before a connection closes, or its close fails.
        const client = knexClient(orm) as unknown as { destroyRawConnection?: (connection: object) => Promise<unknown> };
        const destroy = client.destroyRawConnection?.bind(client);
        if (destroy) {
          client.destroyRawConnection = async (raw: object) => {
            await finalizeKeptStatements(raw);
            return destroy(raw);
          };
        }
        execTransactionControl(Object.getPrototypeOf(client) as KnexDialect);
      }
      const connection = orm.em.getConnection();
      await connection.execute('PRAGMA foreign_keys = ON');
      await connection.execute(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      if (!memory) {
        await connection.execute('PRAGMA journal_mode = WAL');
        await connection.execute(`PRAGMA synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
      }
    },
    statements: (orm) => sqliteStatements(orm, driver),
    poolStats: (orm) => knexPoolStats(orm),
    mergeCommitted: (parent, fork, deleted) => mergeCommittedFork(parent, fork, deleted),
    // One writer, and every commit a sync of the WAL: the runs' writes share commits (see SqliteRunStore).
    runStore: (deps) => new SqliteRunStore(deps),
  };
}

/**
 * Parses `sqlite:<path>`, `sqlite::memory:`, `sqlite:<path>?synchronous=normal` or
 * `sqlite:<path>?driver=sqlite3` (options combine with `&`) into adapter options.
 */
export function sqliteOptionsFromUrl(url: string): SqliteDatabaseOptions {
  if (!url.startsWith('sqlite:')) throw new Error(`Not a SQLite URL: ${url}`);
  const [rest = '', query] = url.slice('sqlite:'.length).replace(/^\/\//, '').split('?', 2) as [string, string | undefined];
  const options: SqliteDatabaseOptions = { path: rest === '' ? './trellis.db' : rest };
  if (query !== undefined) {
    for (const [name, value] of new URLSearchParams(query)) {
      if (name === 'synchronous' && (value === 'full' || value === 'normal')) options.synchronous = value;
      else if (name === 'driver' && (value === 'better-sqlite3' || value === 'sqlite3')) options.driver = value;
      else throw new Error(`Unknown SQLite URL option ${name}=${value} (supported: synchronous=full|normal, driver=better-sqlite3|sqlite3).`);
    }
  }
  return options;
}
