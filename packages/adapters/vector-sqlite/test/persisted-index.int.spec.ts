import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/core';
import { coreModules, createKernel, ExactScanVectorStore, provide, UserService, VdbCollection, vectorStoreServiceIdentifier, vectorToBytes, type Kernel } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { pino } from 'pino';
import { seededVectors } from './seeded-vectors.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// The in-memory index saved in the database: after a restart, the first search of a collection
// loads it (and applies the change log's writes since) instead of building it again, and answers
// exactly; a snapshot the log no longer reaches, or a damaged one, is not used.
describe('sqlite-vec store: the in-memory index saved across restarts', () => {
  const dimension = 20;
  let dir: string;
  let path: string;
  let kernel: Kernel | undefined;
  let store: SqliteVecVectorStore;
  const collectionId = '00000000-0000-7000-8000-000000000001';
  const otherCollectionId = '00000000-0000-7000-8000-000000000002';
  const exact = new ExactScanVectorStore();

  const { vector, newId } = seededVectors(23, dimension);

  /** A kernel on the file with a new store (as a restarted process has); its statements are recorded. */
  const restart = async () => {
    await kernel?.stop();
    store = new SqliteVecVectorStore({ backgroundBuildRows: 100 });
    kernel = createKernel({
      config: { auth: { jwtSecret: 'test-secret-test-secret-test-secret-0123' } },
      database: sqliteDatabase({ path }),
      modules: coreModules,
      adapters: [provide(vectorStoreServiceIdentifier, store)],
      logger: pino({ level: 'silent' }),
    });
    await kernel.start({ jobs: false });
  };
  const recorded = (em: EntityManager) => {
    const statements: string[] = [];
    const connection = em.getConnection();
    const execute = connection.execute.bind(connection);
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      statements.push(sql);
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    return statements;
  };
  const sql = (text: string, params: unknown[] = []) => kernel!.fork().getConnection().execute(text, params, 'all') as Promise<Array<Record<string, unknown>>>;
  const insert = async (rows: Array<{ id: string; vector: Float32Array; collection?: string }>) => {
    const now = new Date().toISOString();
    for (const row of rows) {
      await sql('INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
        row.id,
        row.collection ?? collectionId,
        'x',
        '[]',
        '{}',
        vectorToBytes(row.vector),
        row.vector.length,
        now,
        now,
      ]);
    }
  };
  /** 10,001 writes to the other collection in one statement (more than the change log keeps). */
  let batches = 0;
  const manyOtherWrites = async (count: number) => {
    await sql(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
       INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at)
       SELECT '00000000-0000-7000-a' || printf('%03d', ?) || '-' || printf('%012d', i), ?, 'x', '[]', '{}', ?, ?, '2026-01-01', '2026-01-01' FROM n`,
      [++batches, otherCollectionId, vectorToBytes(vector()), dimension],
    );
  };
  const search = (s: { search: SqliteVecVectorStore['search'] }, q: Float32Array, limit = 10, em = kernel!.fork()) => s.search(em, { collectionId, vector: q, limit, filter: null });
  const agrees = async () => {
    for (let n = 0; n < 3; n++) {
      const q = vector();
      for (const limit of [1, 10]) expect(await search(store, q, limit)).toEqual(await search(exact, q, limit));
    }
  };
  const snapshot = async () => (await sql('SELECT generation, position, count, pages FROM tool_vdb_index_snapshots WHERE collection_id = ?', [collectionId]))[0];
  const logEnd = async () => Number((await sql('SELECT max(seq) AS hi FROM tool_vdb_changes'))[0]!.hi);
  /**
   * The first search after a restart: whether it read the saved index itself, started a build, or
   * answered from the vec0 mirror (none of them: the index `start` began loading answered).
   */
  const firstSearch = async (s: SqliteVecVectorStore = store) => {
    const em = kernel!.fork();
    const statements = recorded(em);
    const q = vector();
    const hits = await search(s, q, 10, em);
    // From the index: exactly the exact scan's answer; from the vec0 mirror (float32, L2 over
    // unit vectors): the same records, distances to ~1e-6.
    const want = await search(exact, q, 10);
    expect(hits.map((hit) => hit.id)).toEqual(want.map((hit) => hit.id));
    hits.forEach((hit, i) => expect(hit.distance).toBeCloseTo(want[i]!.distance, 5));
    return {
      loaded: statements.some((s) => /FROM tool_vdb_index_pages/.test(s)),
      built: statements.some((s) => /ORDER BY id LIMIT \d+$/.test(s)),
      mirror: statements.some((s) => /MATCH/.test(s)),
    };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-vector-saved-'));
    path = join(dir, 'db.sqlite');
    await restart();
    const em = kernel!.fork();
    const user = await kernel!.get(UserService).create(em, { email: 'saved@example.com', password: null });
    const [{ team_id: teamId }] = (await em.getConnection().execute('SELECT team_id FROM team_members WHERE user_id = ?', [user.id], 'all')) as Array<{ team_id: string }>;
    em.create(VdbCollection, { id: collectionId, team: teamId, name: 'Saved', embedder: 'test', dimension, createdAt: new Date(), updatedAt: new Date() });
    em.create(VdbCollection, { id: otherCollectionId, team: teamId, name: 'Other', embedder: 'test', dimension, createdAt: new Date(), updatedAt: new Date() });
    await em.flush();
    const rows = Array.from({ length: 400 }, () => ({ id: newId(), vector: vector() }));
    rows.push({ id: newId(), vector: new Float32Array(dimension) });
    await insert(rows);
    // Rows written in SQL reach the vec0 mirror by a sync (a restart does one).
    await restart();
  });
  afterEach(async () => {
    await store.idle();
  });
  afterAll(async () => {
    await kernel?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('saves the index once built in the background, and a restart loads it instead of building', async () => {
    expect(await snapshot()).toBeUndefined();
    expect(await firstSearch()).toEqual({ loaded: false, built: true, mirror: true });
    await store.idle();
    const saved = await snapshot();
    expect(saved).toMatchObject({ position: await logEnd(), count: 401, pages: 1 });
    await agrees();
    await restart();
    const { built, mirror } = await firstSearch();
    expect({ built, mirror }).toEqual({ built: false, mirror: false });
    await agrees();
    // A store that was not started (no loading in the background): its first search loads it.
    const unstarted = new SqliteVecVectorStore({ backgroundBuildRows: 100 });
    expect(await firstSearch(unstarted)).toEqual({ loaded: true, built: false, mirror: false });
    await unstarted.close();
  });

  it('applies the writes made since the save (insert, update, delete) when it loads', async () => {
    await restart();
    const q = vector();
    const added = newId();
    await insert([{ id: added, vector: q }]);
    const [{ id: first }] = (await sql('SELECT id FROM tool_vdb_records WHERE collection_id = ? ORDER BY id LIMIT 1', [collectionId])) as Array<{ id: string }>;
    await sql('UPDATE tool_vdb_records SET embedding = ? WHERE id = ?', [vectorToBytes(q.map((x) => x * 3)), first]);
    const [{ id: gone }] = (await sql('SELECT id FROM tool_vdb_records WHERE collection_id = ? ORDER BY id DESC LIMIT 1 OFFSET 1', [collectionId])) as Array<{ id: string }>;
    await sql('DELETE FROM tool_vdb_records WHERE id = ?', [gone]);
    expect(await firstSearch()).toMatchObject({ built: false, mirror: false });
    const hits = await search(store, q, 400);
    expect(hits.slice(0, 2).map((hit) => hit.id).sort()).toEqual([added, first].sort());
    expect(hits.map((hit) => hit.id)).not.toContain(gone);
    await agrees();
  });

  it('saves it again once the change log moved far on: only the position when the collection did not change, else a new generation', async () => {
    await restart();
    // Loaded, and changed by the writes of the test before (applied at the load): saved anew.
    await firstSearch();
    const stale = await snapshot();
    await manyOtherWrites(5001);
    await agrees();
    await store.idle();
    const before = await snapshot();
    expect(before).toMatchObject({ position: await logEnd() });
    expect(before!.generation).not.toBe(stale!.generation);
    // Unchanged since: only the position moves.
    await manyOtherWrites(5001);
    await agrees();
    await store.idle();
    const moved = await snapshot();
    expect(moved).toMatchObject({ generation: before!.generation, position: await logEnd() });
    // A write to the collection, then the log moves on again: a new generation of pages.
    await insert([{ id: newId(), vector: vector() }]);
    await manyOtherWrites(5001);
    await agrees();
    await store.idle();
    const resaved = await snapshot();
    expect(resaved!.generation).not.toBe(before!.generation);
    expect(resaved).toMatchObject({ position: await logEnd(), count: Number(before!.count) + 1 });
    expect(await sql('SELECT DISTINCT generation FROM tool_vdb_index_pages')).toEqual([{ generation: resaved!.generation }]);
    await restart();
    expect(await firstSearch()).toMatchObject({ built: false, mirror: false });
    await agrees();
  });

  it('builds instead when the log no longer reaches back to the save, or a page is damaged', async () => {
    // Written while the process is down (the restart's sync brings the mirror up to date).
    await insert([{ id: newId(), vector: vector() }]);
    await manyOtherWrites(10001);
    await restart();
    expect(await firstSearch()).toMatchObject({ built: true, mirror: true });
    await store.idle();
    expect(await snapshot()).toMatchObject({ position: await logEnd() });
    await agrees();
    await restart();
    await sql('UPDATE tool_vdb_index_pages SET codes = X\'00\'');
    const unstarted = new SqliteVecVectorStore({ backgroundBuildRows: 100 });
    expect(await firstSearch(unstarted)).toEqual({ loaded: true, built: true, mirror: true });
    await unstarted.idle();
    await unstarted.close();
    await store.idle();
    await agrees();
  });

  it('forgets the saved indexes when the change log’s triggers were lost', async () => {
    await restart();
    expect(await snapshot()).toBeDefined();
    await sql('DROP TRIGGER tool_vdb_changes_update');
    await restart();
    expect(await snapshot()).toBeUndefined();
    expect(await sql('SELECT count(*) AS n FROM tool_vdb_index_pages')).toEqual([{ n: 0 }]);
    expect(await firstSearch()).toEqual({ loaded: false, built: true, mirror: true });
    await store.idle();
    await agrees();
  });
});
