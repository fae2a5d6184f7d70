import type { DatabaseAdapter, Dialect, MigrationDefinition } from '@trellis/core';
import { importAdapter } from './adapter-packages.js';

/**
 * `sqlite:<path>`, `sqlite::memory:` or `postgres://...` (also `postgresql://`) to an adapter.
 * The adapter package (`@trellis/db-sqlite` or `@trellis/db-postgres`) is imported on demand,
 * when the kernel first connects (its `prepare()`); a missing one fails then with
 * AdapterNotInstalledError naming it. Use `loadDatabaseFromUrl` to import it up front.
 */
export function databaseFromUrl(url: string): DatabaseAdapter {
  const dialect = dialectOfUrl(url);
  let loaded: DatabaseAdapter | undefined;
  let loading: Promise<DatabaseAdapter> | undefined;
  const loadedAdapter = (): DatabaseAdapter => {
    if (!loaded) throw new Error(`The database adapter for ${redactUrl(url)} is not loaded yet: start the kernel (or await database.prepare()) first.`);
    return loaded;
  };
  return {
    dialect,
    get description() {
      return loaded?.description ?? redactUrl(url);
    },
    async prepare() {
      loaded ??= await (loading ??= importDatabase(url, dialect));
      await loaded.prepare?.();
    },
    ormOptions(migrations: readonly MigrationDefinition[]) {
      return loadedAdapter().ormOptions(migrations);
    },
    async afterConnect(orm) {
      await loadedAdapter().afterConnect?.(orm);
    },
    statements(orm) {
      return loadedAdapter().statements(orm);
    },
    // The optional methods are the loaded adapter's own (undefined before it loads, or when it has none).
    get poolStats() {
      const adapter = loaded;
      return adapter?.poolStats ? (orm: Parameters<NonNullable<DatabaseAdapter['poolStats']>>[0]) => adapter.poolStats!(orm) : undefined;
    },
    get runStore() {
      const adapter = loaded;
      return adapter?.runStore ? (deps: Parameters<NonNullable<DatabaseAdapter['runStore']>>[0]) => adapter.runStore!(deps) : undefined;
    },
    get mergeCommitted() {
      const adapter = loaded;
      return adapter?.mergeCommitted ? (...args: Parameters<NonNullable<DatabaseAdapter['mergeCommitted']>>) => adapter.mergeCommitted!(...args) : undefined;
    },
  };
}

/** Like `databaseFromUrl`, with the adapter package imported now (so a missing one fails here). */
export async function loadDatabaseFromUrl(url: string): Promise<DatabaseAdapter> {
  const database = databaseFromUrl(url);
  await database.prepare!();
  return database;
}

function dialectOfUrl(url: string): Dialect {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgresql';
  throw new Error(`Unsupported database URL "${url}": use sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/database.`);
}

async function importDatabase(url: string, dialect: Dialect): Promise<DatabaseAdapter> {
  const reason = `database.url ${redactUrl(url)}`;
  if (dialect === 'sqlite') {
    const { sqliteDatabase, sqliteOptionsFromUrl } = await importAdapter('@trellis/db-sqlite', reason);
    return sqliteDatabase(sqliteOptionsFromUrl(url));
  }
  const { postgresDatabase } = await importAdapter('@trellis/db-postgres', reason);
  return postgresDatabase({ url });
}

/** The URL without its password, for messages and logs. */
function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}
