import { Migration, Migrator } from '@mikro-orm/migrations';
import { SqliteDriver, type Options } from '@mikro-orm/sqlite';
import { toMigrationEntries, type DatabaseAdapter } from '@trellis/core';

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
  return {
    dialect: 'sqlite',
    description: `sqlite:${path}`,
    ormOptions(migrations): Options {
      return {
        driver: SqliteDriver,
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
      const connection = orm.em.getConnection();
      await connection.execute('PRAGMA foreign_keys = ON');
      await connection.execute(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      if (!memory) {
        await connection.execute('PRAGMA journal_mode = WAL');
        await connection.execute(`PRAGMA synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
      }
    },
  };
}

/** Parses `sqlite:<path>`, `sqlite::memory:` or `sqlite:<path>?synchronous=normal` into adapter options. */
export function sqliteOptionsFromUrl(url: string): SqliteDatabaseOptions {
  if (!url.startsWith('sqlite:')) throw new Error(`Not a SQLite URL: ${url}`);
  const [rest = '', query] = url.slice('sqlite:'.length).replace(/^\/\//, '').split('?', 2) as [string, string | undefined];
  const options: SqliteDatabaseOptions = { path: rest === '' ? './trellis.db' : rest };
  if (query !== undefined) {
    for (const [name, value] of new URLSearchParams(query)) {
      if (name !== 'synchronous' || (value !== 'full' && value !== 'normal')) throw new Error(`Unknown SQLite URL option ${name}=${value} (supported: synchronous=full|normal).`);
      options.synchronous = value;
    }
  }
  return options;
}
