import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { coreModules, createKernel, preparedStatementsServiceIdentifier, sqlStatement } from '@trellis/core';
import { sqliteDatabase, type SqliteDriverName } from '@trellis/db-sqlite';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

const count = sqlStatement('test.close_count_users', 'select count(*) as "n" from "users"');

// Stopping closes the database: SQLite checkpoints the WAL into the file and removes it when its
// last connection closes. Before, the prepared statements the adapter keeps were never finalized,
// so the driver's close failed (SQLITE_BUSY, ignored): the file stayed open with its -wal beside
// it, and a copy of the file alone missed the last commits (bench/mixed-load.mjs lost its saved
// vector index that way).
describe.each(['sqlite3', 'better-sqlite3'] as SqliteDriverName[])('stopping on the %s driver', (driver) => {
  it('closes the database: the WAL is checkpointed and removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), `trellis-close-${driver}-`));
    try {
      const path = join(dir, 'test.db');
      const kernel = createKernel({
        database: sqliteDatabase({ path, driver }),
        modules: coreModules,
        logger: pino({ level: 'silent' }),
        config: { auth: { jwtSecret: 'x'.repeat(40) } },
      });
      await kernel.start({ jobs: false });
      const statements = kernel.get(preparedStatementsServiceIdentifier);
      // Prepared statements kept (several copies of one when called at once), and a write.
      await Promise.all([statements.first(count), statements.first(count), statements.first(count)]);
      await kernel.fork().getConnection().execute('CREATE TABLE close_test (x integer)', [], 'run');
      expect(existsSync(`${path}-wal`)).toBe(true);
      await kernel.stop();
      expect(existsSync(`${path}-wal`)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
