import { Migration, Migrator } from '@mikro-orm/migrations';
import { SqliteDriver, type Options } from '@mikro-orm/sqlite';
import { toMigrationEntries, type DatabaseAdapter } from '@trellis/core';

export interface SqliteDatabaseOptions {
  /** File path, or `:memory:` for a private in-memory database. Default `./trellis.db`. */
  path?: string;
  /** Milliseconds a writer waits for the lock before failing (default 5000). */
  busyTimeoutMs?: number;
}

/**
 * The embedded default database: one SQLite file (or memory), WAL journal, foreign keys on, and a
 * busy timeout so concurrent writers wait instead of failing. One connection: SQLite serialises
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
        await connection.execute('PRAGMA synchronous = NORMAL');
      }
    },
  };
}

/** Parses `sqlite:<path>` or `sqlite::memory:` into adapter options. */
export function sqliteOptionsFromUrl(url: string): SqliteDatabaseOptions {
  if (!url.startsWith('sqlite:')) throw new Error(`Not a SQLite URL: ${url}`);
  const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
  return { path: rest === '' ? './trellis.db' : rest };
}
