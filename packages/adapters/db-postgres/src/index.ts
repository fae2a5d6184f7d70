import { Migration, Migrator } from '@mikro-orm/migrations';
import { EntityManager, PostgreSqlDriver, type Options } from '@mikro-orm/postgresql';
import { toMigrationEntries, type DatabaseAdapter } from '@trellis/core';
import { knexPoolStats, mergeCommittedFork, withoutAsyncFlushContext } from '@trellis/db-mikro-orm';
import { PgRunStore } from './run-store.js';
import { postgresStatements } from './statements.js';

export { PgRunStore } from './run-store.js';

export interface PostgresDatabaseOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** Connection pool size (default 2 to 10). */
  pool?: { min?: number; max?: number };
  /** Schema to use instead of `public`. */
  schema?: string;
}

export function postgresDatabase(options: PostgresDatabaseOptions): DatabaseAdapter {
  return {
    dialect: 'postgresql',
    description: redactUrl(options.url),
    ormOptions(migrations): Options {
      return {
        driver: PostgreSqlDriver,
        // The driver's entity manager, with a flush that enters no async context (see @trellis/db-mikro-orm).
        entityManager: withoutAsyncFlushContext(EntityManager) as unknown as Options['entityManager'],
        clientUrl: options.url,
        ...(options.schema ? { schema: options.schema } : {}),
        extensions: [Migrator],
        pool: {
          min: options.pool?.min ?? 2,
          max: options.pool?.max ?? 10,
          // Prepared statements name their tables without a schema: resolve them in this one.
          ...(options.schema ? { afterCreate: searchPath(options.schema) } : {}),
        },
        migrations: {
          migrationsList: toMigrationEntries(migrations, 'postgresql', Migration) as never,
          transactional: true,
          allOrNothing: true,
          snapshot: false,
          tableName: 'trellis_migrations',
        },
      };
    },
    statements: (orm) => postgresStatements(orm),
    poolStats: (orm) => knexPoolStats(orm),
    mergeCommitted: (parent, fork, deleted) => mergeCommittedFork(parent, fork, deleted),
    // A transaction per write (many connections), a run's create and final write each one
    // statement where they can be (see PgRunStore); a new run's credit hold otherwise goes last
    // before its commit, so the balance's row lock the team's other runs wait for is held for the
    // commit only.
    runStore: (deps) => new PgRunStore(deps),
  };
}

function searchPath(schema: string) {
  return (connection: { query(sql: string, callback: (error: Error | null) => void): void }, done: (error: Error | null, connection: unknown) => void) => {
    connection.query(`SET search_path TO "${schema.replace(/"/g, '""')}", public`, (error) => done(error, connection));
  };
}

/** The URL with its password replaced, for logs and `doctor`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable url)';
  }
}
