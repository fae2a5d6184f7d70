import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver, type Options } from '@mikro-orm/postgresql';
import type { DatabaseAdapter, MigrationEntry } from '@trellis/core';
import { postgresMigrations } from './migrations/index.js';

export interface PostgresDatabaseOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** Connection pool size (default 2 to 10). */
  pool?: { min?: number; max?: number };
  /** Schema to use instead of `public`. */
  schema?: string;
  migrations?: readonly MigrationEntry[];
}

export function postgresDatabase(options: PostgresDatabaseOptions): DatabaseAdapter {
  const migrations = [...postgresMigrations, ...(options.migrations ?? [])];
  return {
    dialect: 'postgresql',
    description: redact(options.url),
    migrations,
    ormOptions(): Options {
      return {
        driver: PostgreSqlDriver,
        clientUrl: options.url,
        ...(options.schema ? { schema: options.schema } : {}),
        extensions: [Migrator],
        pool: { min: options.pool?.min ?? 2, max: options.pool?.max ?? 10 },
        migrations: {
          migrationsList: migrations.map((m) => ({ name: m.name, class: m.class as never })),
          transactional: true,
          allOrNothing: true,
          snapshot: false,
          tableName: 'trellis_migrations',
        },
      };
    },
  };
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable url)';
  }
}

export { postgresMigrations };
