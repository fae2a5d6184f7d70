import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { coreModules, createKernel, inTransaction, preparedStatementsServiceIdentifier, sqlStatement, type Kernel } from '@trellis/core';
import { sqliteDatabase, sqliteOptionsFromUrl, type SqliteDriverName } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const count = sqlStatement('test.count_users', 'select count(*) as "n" from "users"');
const insert = sqlStatement('test.insert_user', 'insert into "users" ("id", "email", "name", "status", "is_site_admin", "is_developer", "is_administrator", "created_at", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?)');
const byId = sqlStatement('test.user_by_id', 'select "is_developer", "created_at" from "users" where "id" = ?');

// Both SQLite drivers behind the adapter: pragmas, the prepared-statement runner (alone and inside
// a transaction, which it joins), and sqlite-vec loaded into the connection.
describe.each(['sqlite3', 'better-sqlite3'] as SqliteDriverName[])('the %s driver', (driver) => {
  const dir = mkdtempSync(join(tmpdir(), `trellis-${driver}-`));
  let kernel: Kernel;

  beforeAll(async () => {
    kernel = createKernel({
      database: sqliteDatabase({ path: join(dir, 'test.db'), driver }),
      modules: coreModules,
      logger: pino({ level: 'silent' }),
      config: { auth: { jwtSecret: 'x'.repeat(40) } },
    });
    await kernel.start({ jobs: false });
  });
  afterAll(async () => {
    await kernel?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs in WAL mode with synchronous=FULL and foreign keys on', async () => {
    const connection = kernel.fork().getConnection();
    const pragma = async (name: string) => Object.values(((await connection.execute(`PRAGMA ${name}`, [], 'all')) as Array<Record<string, unknown>>)[0]!)[0];
    expect(await pragma('journal_mode')).toBe('wal');
    expect(Number(await pragma('synchronous'))).toBe(2);
    expect(Number(await pragma('foreign_keys'))).toBe(1);
  });

  it('binds dates and booleans as the ORM stores them, and a statement in a transaction joins it', async () => {
    const sql = kernel.get(preparedStatementsServiceIdentifier);
    const before = Number((await sql.first<{ n: number }>(count))!.n);
    const at = new Date('2026-01-02T03:04:05.678Z');
    const tx = kernel.fork();
    await tx.begin();
    await sql.run(insert, ['u-rolled-back', 'rb@example.com', 'R', 'active', false, true, false, at, at], tx);
    expect(Number((await sql.first<{ n: number }>(count, [], tx))!.n)).toBe(before + 1);
    await tx.rollback();
    expect(Number((await sql.first<{ n: number }>(count))!.n)).toBe(before);
    expect(await sql.run(insert, ['u-kept', 'kept@example.com', 'K', 'active', false, true, false, at, at])).toBe(1);
    const row = (await sql.first<Record<string, unknown>>(byId, ['u-kept']))!;
    expect(row['is_developer']).toBe(1);
    expect(row['created_at']).toBe(at.getTime());
  });

  it('answers concurrent calls of one statement each with its own result, in a transaction and outside', async () => {
    const sql = kernel.get(preparedStatementsServiceIdentifier);
    const at = new Date('2026-03-04T05:06:07.000Z');
    const ids = Array.from({ length: 40 }, (_, i) => `u-concurrent-${driver}-${i}`);
    const tx = kernel.fork();
    await tx.begin();
    // sqlite3 runs one call of a prepared statement at a time: these go to several prepared copies.
    const changes = await Promise.all(ids.map((id, i) => sql.run(insert, [id, `${id}@example.com`, 'C', 'active', false, i % 2 === 0, false, at, at], tx)));
    expect(changes).toEqual(ids.map(() => 1));
    const inside = await Promise.all(ids.map((id) => sql.first<Record<string, unknown>>(byId, [id], tx)));
    expect(inside.map((row) => row?.['is_developer'])).toEqual(ids.map((_, i) => (i % 2 === 0 ? 1 : 0)));
    await tx.commit();
    const outside = await Promise.all(ids.map((id) => sql.first<Record<string, unknown>>(byId, [id])));
    expect(outside.map((row) => row?.['created_at'])).toEqual(ids.map(() => at.getTime()));
  });

  it('commits, rolls back and nests transactions, their control statements one exec each on sqlite3', async () => {
    // The sqlite3 module the adapter's ORM driver loads (one copy in the workspace).
    const sqlite3 = createRequire(createRequire(import.meta.url).resolve('@mikro-orm/sqlite'))('sqlite3') as { Database: { prototype: Record<string, (...args: unknown[]) => unknown> } };
    const all = vi.spyOn(sqlite3.Database.prototype, 'all');
    const exec = vi.spyOn(sqlite3.Database.prototype, 'exec');
    const sql = kernel.get(preparedStatementsServiceIdentifier);
    const at = new Date('2026-05-06T07:08:09.000Z');
    const row = (id: string) => [id, `${id}@example.com`, 'T', 'active', false, false, false, at, at];
    const has = async (id: string) => (await sql.first(byId, [id])) !== undefined;
    try {
      await inTransaction(kernel.fork(), async (tx) => {
        await sql.run(insert, row(`u-tx-kept-${driver}`), tx);
        // A savepoint that rolls back, inside a transaction that commits.
        await expect(
          inTransaction(tx, async (inner) => {
            await sql.run(insert, row(`u-tx-inner-${driver}`), inner);
            throw new Error('inner fails');
          }),
        ).rejects.toThrow('inner fails');
        // A savepoint that is released.
        await inTransaction(tx, (inner) => sql.run(insert, row(`u-tx-released-${driver}`), inner));
      });
      await expect(
        inTransaction(kernel.fork(), async (tx) => {
          await sql.run(insert, row(`u-tx-rolled-back-${driver}`), tx);
          throw new Error('outer fails');
        }),
      ).rejects.toThrow('outer fails');
      expect([await has(`u-tx-kept-${driver}`), await has(`u-tx-inner-${driver}`), await has(`u-tx-released-${driver}`), await has(`u-tx-rolled-back-${driver}`)]).toEqual([true, false, true, false]);
      const control = (calls: unknown[][]) => calls.map((call) => String(call[0])).filter((text) => /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(text));
      if (driver === 'sqlite3') {
        expect(control(all.mock.calls)).toEqual([]);
        expect(control(exec.mock.calls)).toEqual(['BEGIN;', expect.stringMatching(/^SAVEPOINT \w+;$/), expect.stringMatching(/^ROLLBACK TO SAVEPOINT \w+$/), expect.stringMatching(/^SAVEPOINT \w+;$/), expect.stringMatching(/^RELEASE SAVEPOINT \w+;$/), 'COMMIT;', 'BEGIN;', 'ROLLBACK']);
      }
    } finally {
      all.mockRestore();
      exec.mockRestore();
    }
  });

  it('does not keep a statement that failed to prepare', async () => {
    const sql = kernel.get(preparedStatementsServiceIdentifier);
    const broken = sqlStatement(`test.broken_${driver}`, 'select "id" from "no_such_table"');
    const failures = await Promise.allSettled([sql.all(broken), sql.all(broken), sql.all(broken)]);
    expect(failures.map((f) => f.status)).toEqual(['rejected', 'rejected', 'rejected']);
    await expect(sql.all(broken)).rejects.toThrow(/no_such_table/);
    expect(Number((await sql.first<{ n: number }>(count))!.n)).toBeGreaterThan(0);
  });

  it('loads sqlite-vec into the connection', async () => {
    const store = new SqliteVecVectorStore();
    const orm = kernel.container.get<{ em: unknown }>(Symbol.for('@trellis/core/MikroORM'));
    await store.start(orm as never);
    expect(await store.version(kernel.fork())).toMatch(/^v\d/);
  });
});

describe('sqliteOptionsFromUrl', () => {
  it('reads driver and synchronous, and refuses anything else', () => {
    expect(sqliteOptionsFromUrl('sqlite:./a.db?driver=better-sqlite3&synchronous=normal')).toEqual({ path: './a.db', driver: 'better-sqlite3', synchronous: 'normal' });
    expect(sqliteOptionsFromUrl('sqlite::memory:')).toEqual({ path: ':memory:' });
    expect(() => sqliteOptionsFromUrl('sqlite:./a.db?driver=mysql')).toThrow(/driver=better-sqlite3\|sqlite3/);
  });
});
