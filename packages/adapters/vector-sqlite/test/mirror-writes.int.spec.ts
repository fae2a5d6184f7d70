import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/core';
import { coreModules, createKernel, ExactScanVectorStore, inTransaction, provide, UserService, VdbCollection, vectorStoreServiceIdentifier, vectorToBytes, type Kernel } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { pino } from 'pino';
import { seededVectors } from './seeded-vectors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The vec0 mirror written by `upsert` and `remove` in batches (a few statements per 500 records):
// whatever mix of new, replaced, duplicated and zero vectors a call carries, the mirror ends up
// holding exactly the records' vectors, and its searches agree with the exact scan.
describe('sqlite-vec store: batched mirror writes', () => {
  const dimension = 24;
  let dir: string;
  let kernel: Kernel;
  let collectionId: string;
  // The mirror alone answers unfiltered searches (no in-memory index).
  const store = new SqliteVecVectorStore({ memoryIndex: false });
  const exact = new ExactScanVectorStore();

  const { vector, newId } = seededVectors(7, dimension);

  /** Writes records and their vectors in one transaction, as the API's batch insert does (last entry of an id wins). */
  const write = async (rows: Array<{ id: string; vector: Float32Array }>) => {
    const now = new Date().toISOString();
    await inTransaction(kernel.fork(), async (tx: EntityManager) => {
      for (const row of rows) {
        await tx
          .getConnection()
          .execute(
            'INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding',
            [row.id, collectionId, 'x', '[]', '{}', vectorToBytes(row.vector), dimension, now, now],
            'run',
            tx.getTransactionContext(),
          );
      }
      await store.upsert(tx, rows.map((row) => ({ id: row.id, collectionId, vector: row.vector, tags: [], metadata: {} })));
    });
  };
  const removeAll = async (ids: string[]) => {
    await inTransaction(kernel.fork(), async (tx: EntityManager) => {
      for (const id of ids) await tx.getConnection().execute('DELETE FROM tool_vdb_records WHERE id = ?', [id], 'run', tx.getTransactionContext());
      await store.remove(tx, collectionId, ids);
    });
  };
  const count = async (sql: string) => Number(((await kernel.fork().getConnection().execute(sql, [], 'all')) as Array<{ n: number }>)[0]!.n);
  /** The mirror holds one row per record with a direction, the zero table one per zero vector, and searches agree with the exact scan. */
  const consistent = async () => {
    const zero = "(SELECT count(*) FROM tool_vdb_zero z WHERE z.record_id = r.id)";
    expect(await count(`SELECT count(*) AS n FROM tool_vdb_unit_${dimension}`)).toBe(await count(`SELECT count(*) AS n FROM tool_vdb_records r WHERE ${zero} = 0`));
    expect(await count('SELECT count(*) AS n FROM tool_vdb_zero')).toBe(await count(`SELECT count(*) AS n FROM tool_vdb_records r WHERE ${zero} = 1`));
    expect(await count(`SELECT count(*) AS n FROM tool_vdb_unit_${dimension} WHERE record_id NOT IN (SELECT id FROM tool_vdb_records)`)).toBe(0);
    for (let i = 0; i < 3; i++) {
      const q = vector();
      const hits = await store.search(kernel.fork(), { collectionId, vector: q, limit: 15, filter: null });
      const want = await exact.search(kernel.fork(), { collectionId, vector: q, limit: 15, filter: null });
      // The mirror ranks in float32 (L2 over unit vectors): the same records, distances to ~1e-6.
      expect(hits.map((hit) => hit.id)).toEqual(want.map((hit) => hit.id));
      hits.forEach((hit, j) => expect(hit.distance).toBeCloseTo(want[j]!.distance, 5));
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-vector-mirror-'));
    kernel = createKernel({
      config: { auth: { jwtSecret: 'test-secret-test-secret-test-secret-0123' } },
      database: sqliteDatabase({ path: join(dir, 'db.sqlite') }),
      modules: coreModules,
      adapters: [provide(vectorStoreServiceIdentifier, store)],
      logger: pino({ level: 'silent' }),
    });
    await kernel.start({ jobs: false });
    const em = kernel.fork();
    const user = await kernel.get(UserService).create(em, { email: 'mirror@example.com', password: null });
    const [{ team_id: teamId }] = (await em.getConnection().execute('SELECT team_id FROM team_members WHERE user_id = ?', [user.id], 'all')) as Array<{ team_id: string }>;
    collectionId = '00000000-0000-7000-8000-000000000001';
    em.create(VdbCollection, { id: collectionId, team: teamId, name: 'Mirror', embedder: 'test', dimension, createdAt: new Date(), updatedAt: new Date() });
    await em.flush();
  });
  afterAll(async () => {
    await kernel?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('adds 1,200 records in one call (three chunks), zero vectors and a repeated id included', async () => {
    const rows = Array.from({ length: 1200 }, () => ({ id: newId(), vector: vector() }));
    for (const i of [3, 600, 1100]) rows[i]!.vector = new Float32Array(dimension);
    // The same id twice in one chunk: the later vector is the record's.
    const repeated = { id: rows[10]!.id, vector: vector() };
    rows.push(repeated);
    await write(rows);
    await consistent();
    const [top] = await store.search(kernel.fork(), { collectionId, vector: repeated.vector, limit: 1, filter: null });
    expect(top).toEqual({ id: repeated.id, distance: expect.closeTo(0, 5) });
  });

  it('replaces existing vectors (a direction, a zero vector, a zero turned into a direction) without duplicates', async () => {
    const ids = ((await kernel.fork().getConnection().execute('SELECT id FROM tool_vdb_records ORDER BY id LIMIT 700', [], 'all')) as Array<{ id: string }>).map((row) => row.id);
    const rows = ids.map((id) => ({ id, vector: vector() }));
    // Record 3 was a zero vector: now a direction; record 5 becomes a zero vector.
    rows[5]!.vector = new Float32Array(dimension);
    // Some new records in the same call.
    for (let i = 0; i < 50; i++) rows.push({ id: newId(), vector: vector() });
    await write(rows);
    await consistent();
    expect(await count(`SELECT count(*) AS n FROM tool_vdb_zero WHERE record_id = '${ids[3]}'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM tool_vdb_zero WHERE record_id = '${ids[5]}'`)).toBe(1);
    const [top] = await store.search(kernel.fork(), { collectionId, vector: rows[3]!.vector, limit: 1, filter: null });
    expect(top!.id).toBe(ids[3]);
  });

  it('removes 600 records in one call, zero vectors and ids it never held included', async () => {
    const ids = ((await kernel.fork().getConnection().execute('SELECT id FROM tool_vdb_records ORDER BY id DESC LIMIT 600', [], 'all')) as Array<{ id: string }>).map((row) => row.id);
    const zeros = ((await kernel.fork().getConnection().execute('SELECT record_id AS id FROM tool_vdb_zero', [], 'all')) as Array<{ id: string }>).map((row) => row.id);
    await removeAll([...new Set([...ids, ...zeros, newId()])]);
    await consistent();
    expect(await count('SELECT count(*) AS n FROM tool_vdb_zero')).toBe(0);
  });

  it('the sync of a start checks the records the change log names since the last, or all of them when the log no longer reaches back', async () => {
    const em = kernel.fork();
    const statements: string[] = [];
    const connection = em.getConnection();
    const execute = connection.execute.bind(connection);
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      statements.push(sql);
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    const behind = async (text: string, params: unknown[]) => kernel.fork().getConnection().execute(text, params, 'run');
    const now = new Date().toISOString();
    const insert = 'INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
    // Written behind the store's back (no upsert or remove): new records, a zero vector, deletions, a direction turned to zero.
    const added = [newId(), newId()];
    for (const id of added) await behind(insert, [id, collectionId, 'x', '[]', '{}', vectorToBytes(vector()), dimension, now, now]);
    await behind(insert, [newId(), collectionId, 'x', '[]', '{}', vectorToBytes(new Float32Array(dimension)), dimension, now, now]);
    const ids = ((await kernel.fork().getConnection().execute('SELECT id FROM tool_vdb_records ORDER BY id LIMIT 3', [], 'all')) as Array<{ id: string }>).map((row) => row.id);
    await behind('DELETE FROM tool_vdb_records WHERE id IN (?, ?)', [ids[0], ids[1]]);
    await behind('UPDATE tool_vdb_records SET embedding = ? WHERE id = ?', [vectorToBytes(new Float32Array(dimension)), ids[2]]);
    await store.sync(em, { all: false });
    expect(statements.some((sql) => /NOT IN \(SELECT record_id FROM tool_vdb_unit_/.test(sql))).toBe(false);
    await consistent();
    // More writes than the log keeps (10,000) since the last sync: every record is checked.
    await kernel
      .fork()
      .getConnection()
      .execute(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10001)
         INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at)
         SELECT '00000000-0000-7000-b000-' || printf('%012d', i), ?, 'x', '[]', '{}', ?, ?, '2026-01-01', '2026-01-01' FROM n`,
        [collectionId, vectorToBytes(vector()), dimension],
        'run',
      );
    statements.length = 0;
    await store.sync(em, { all: false });
    expect(statements.some((sql) => /NOT IN \(SELECT record_id FROM tool_vdb_unit_/.test(sql))).toBe(true);
    await consistent();
    connection.execute = execute;
  });
});
