import { Migration, Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver, type Options } from '@mikro-orm/postgresql';
import { toMigrationEntries, type DatabaseAdapter } from '@trellis/core';

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
        clientUrl: options.url,
        ...(options.schema ? { schema: options.schema } : {}),
        extensions: [Migrator],
        pool: { min: options.pool?.min ?? 2, max: options.pool?.max ?? 10 },
        migrations: {
          migrationsList: toMigrationEntries(migrations, 'postgresql', Migration) as never,
          transactional: true,
          allOrNothing: true,
          snapshot: false,
          tableName: 'trellis_migrations',
        },
      };
    },
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
