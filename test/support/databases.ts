import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseAdapter } from '@trellis/core';
import { postgresDatabase } from '@trellis/db-postgres';
import { sqliteDatabase } from '@trellis/db-sqlite';
import pg from 'pg';

export interface TestDatabaseHandle {
  adapter: DatabaseAdapter;
  /** Connection URL of this database (for CLI runs and second processes). */
  url: string;
  drop(): Promise<void>;
}

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty database of this kind. */
  create(): Promise<TestDatabaseHandle>;
}

const sqlite: TestDatabase = {
  name: 'sqlite',
  async create() {
    return { adapter: sqliteDatabase({ path: ':memory:' }), url: 'sqlite::memory:', drop: async () => undefined };
  },
};

function postgres(baseUrl: string): TestDatabase {
  return {
    name: 'postgres',
    async create() {
      const name = `trellis_t_${process.pid}_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: baseUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE "${name}"`);
      await admin.end();
      const url = new URL(baseUrl);
      url.pathname = `/${name}`;
      return {
        adapter: postgresDatabase({ url: url.toString(), pool: { min: 1, max: 10 } }),
        url: url.toString(),
        async drop() {
          const client = new pg.Client({ connectionString: baseUrl });
          await client.connect();
          await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
          await client.end();
        },
      };
    },
  };
}

/** SQLite always; PostgreSQL too when TRELLIS_TEST_POSTGRES_URL is set. Use with `describe.each`. */
export function testDatabases(): TestDatabase[] {
  const url = process.env.TRELLIS_TEST_POSTGRES_URL;
  return url ? [sqlite, postgres(url)] : [sqlite];
}

/**
 * One database that several hosts open, side by side or one after another, as processes behind a
 * load balancer do: a SQLite file in a temporary folder, or one PostgreSQL database.
 */
export function sharedDatabase(base: TestDatabase): TestDatabase & { cleanup(): Promise<void> } {
  let postgres: TestDatabaseHandle | undefined;
  let dir: string | undefined;
  return {
    name: base.name,
    async create() {
      if (base.name === 'sqlite') {
        dir ??= mkdtempSync(join(tmpdir(), 'trellis-shared-'));
        const path = join(dir, 'shared.db');
        return { adapter: sqliteDatabase({ path }), url: `sqlite:${path}`, drop: async () => undefined };
      }
      postgres ??= await base.create();
      return { adapter: postgresDatabase({ url: postgres.url, pool: { min: 1, max: 5 } }), url: postgres.url, drop: async () => undefined };
    },
    async cleanup() {
      await postgres?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
