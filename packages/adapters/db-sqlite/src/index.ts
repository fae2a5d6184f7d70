import { Migrator } from '@mikro-orm/migrations';
import { SqliteDriver, type Options } from '@mikro-orm/sqlite';
import type { DatabaseAdapter, MigrationEntry } from '@trellis/core';
import { sqliteMigrations } from './migrations/index.js';

export interface SqliteDatabaseOptions {
  /** File path, or `:memory:` for a private in-memory database. Default `./trellis.db`. */
  path?: string;
  /** Extra migrations appended after Trellis' own (for modules of your own). */
  migrations?: readonly MigrationEntry[];
}

/**
 * The embedded default database: one SQLite file (or memory), WAL journal, foreign keys on, and a
 * busy timeout so concurrent writers wait instead of failing.
 */
export function sqliteDatabase(options: SqliteDatabaseOptions = {}): DatabaseAdapter {
  const path = options.path ?? './trellis.db';
  const memory = path === ':memory:';
  const migrations = [...sqliteMigrations, ...(options.migrations ?? [])];
  return {
    dialect: 'sqlite',
    description: `sqlite:${path}`,
    migrations,
    ormOptions(): Options {
      return {
        driver: SqliteDriver,
        dbName: path,
        extensions: [Migrator],
        // One connection: SQLite serialises writers anyway, and `:memory:` is per connection.
        pool: { min: 1, max: 1 },
        migrations: {
          migrationsList: migrations.map((m) => ({ name: m.name, class: m.class as never })),
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
      await connection.execute('PRAGMA busy_timeout = 5000');
      if (!memory) {
        await connection.execute('PRAGMA journal_mode = WAL');
        await connection.execute('PRAGMA synchronous = NORMAL');
      }
    },
  };
}

/** Parses `sqlite:<path>` / `sqlite::memory:` into adapter options. */
export function sqliteOptionsFromUrl(url: string): SqliteDatabaseOptions {
  if (!url.startsWith('sqlite:')) throw new Error(`Not a SQLite URL: ${url}`);
  const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
  return { path: rest === '' ? './trellis.db' : rest };
}

export { sqliteMigrations };
