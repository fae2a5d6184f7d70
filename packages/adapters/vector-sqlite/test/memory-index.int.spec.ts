import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/core';
import { coreModules, createKernel, ExactScanVectorStore, provide, UserService, VdbCollection, vectorStoreServiceIdentifier, vectorToBytes, type Kernel } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { pino } from 'pino';
import { seededVectors } from './seeded-vectors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The in-memory index of unfiltered searches against the exact scan (cosine in process, ties by
// id), on a SQLite file written by this store's process and by a second kernel on the same file
// (another connection, as another process would be).
describe('sqlite-vec store: in-memory quantised index', () => {
  const dimension = 24;
  let dir: string;
  let kernel: Kernel;
  let other: Kernel;
  let store: SqliteVecVectorStore;
  let collectionId: string;
  let otherCollectionId: string;
  const exact = new ExactScanVectorStore();

  const { vector, newId } = seededVectors(11, dimension);

  const start = (path: string, vectorStore: SqliteVecVectorStore) => {
    const k = createKernel({
      config: { auth: { jwtSecret: 'test-secret-test-secret-test-secret-0123' } },
      database: sqliteDatabase({ path }),
      modules: coreModules,
      adapters: [provide(vectorStoreServiceIdentifier, vectorStore)],
      logger: pino({ level: 'silent' }),
    });
    return k;
  };
  const insert = async (em: EntityManager, rows: Array<{ id: string; vector: Float32Array; collection?: string }>) => {
    const now = new Date().toISOString();
    for (const row of rows) {
      await em
        .getConnection()
        .execute(
          'INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [row.id, row.collection ?? collectionId, 'x', '[]', '{}', vectorToBytes(row.vector), row.vector.length, now, now],
          'run',
          em.getTransactionContext(),
        );
    }
  };
  /** The re-ranking statement of a search through the index (it reads the log too). */
  const reRanking = /UNION SELECT record_id FROM tool_vdb_changes WHERE seq > \?/;
  const search = (s: { search: SqliteVecVectorStore['search'] }, q: Float32Array, limit = 10, em = kernel.fork()) => s.search(em, { collectionId, vector: q, limit, filter: null });
  /** The store answers exactly what the exact scan answers, ids and distances, for a few queries and limits. */
  const agrees = async (queries: Float32Array[] = [vector(), vector(), vector()]) => {
    for (const q of queries) for (const limit of [1, 10, 33]) expect(await search(store, q, limit)).toEqual(await search(exact, q, limit));
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-vector-index-'));
    store = new SqliteVecVectorStore();
    kernel = start(join(dir, 'db.sqlite'), store);
    await kernel.start({ jobs: false });
    other = start(join(dir, 'db.sqlite'), new SqliteVecVectorStore());
    await other.start({ jobs: false });
    const em = kernel.fork();
    const user = await kernel.get(UserService).create(em, { email: 'index@example.com', password: null });
    const [{ team_id: teamId }] = (await em.getConnection().execute('SELECT team_id FROM team_members WHERE user_id = ?', [user.id], 'all')) as Array<{ team_id: string }>;
    collectionId = '00000000-0000-7000-8000-000000000001';
    otherCollectionId = '00000000-0000-7000-8000-000000000002';
    em.create(VdbCollection, { id: collectionId, team: teamId, name: 'Index', embedder: 'test', dimension, createdAt: new Date(), updatedAt: new Date() });
    em.create(VdbCollection, { id: otherCollectionId, team: teamId, name: 'Other', embedder: 'test', dimension, createdAt: new Date(), updatedAt: new Date() });
    await em.flush();
    // Random directions, exact duplicates, scaled copies (equal distances: ties by id) and zero vectors.
    const rows = Array.from({ length: 400 }, () => ({ id: newId(), vector: vector() }));
    for (let i = 0; i < 40; i++) rows.push({ id: newId(), vector: rows[i]!.vector.map((x) => x * (i % 2 ? 1 : 3)) });
    for (let i = 0; i < 3; i++) rows.push({ id: newId(), vector: new Float32Array(dimension) });
    await insert(em, rows);
  });
  afterAll(async () => {
    await other?.stop();
    await kernel?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers the exact top k, duplicates and zero vectors included', async () => {
    await agrees();
    // A query equal to a duplicated direction: both copies at distance 0, in id order.
    const [first] = (await kernel.fork().getConnection().execute('SELECT embedding FROM tool_vdb_records ORDER BY id LIMIT 1', [], 'all')) as Array<{ embedding: Buffer }>;
    const q = new Float32Array(first!.embedding.buffer.slice(first!.embedding.byteOffset, first!.embedding.byteOffset + dimension * 4));
    const hits = await search(store, q, 3);
    expect(hits.slice(0, 2).map((hit) => hit.distance)).toEqual([expect.closeTo(0, 6), expect.closeTo(0, 6)]);
    expect(hits).toEqual(await search(exact, q, 3));
    // The index was built and is what answered: its change log exists.
    expect(await kernel.fork().getConnection().execute("SELECT name FROM sqlite_master WHERE name = 'tool_vdb_changes'", [], 'all')).toHaveLength(1);
  });

  it('follows inserts, updates and deletes of this process', async () => {
    const em = kernel.fork();
    const q = vector();
    await agrees([q]);
    const id = newId();
    await insert(em, [{ id, vector: q.map((x) => x * 2) }]);
    expect((await search(store, q, 1))[0]).toEqual({ id, distance: expect.closeTo(0, 6) });
    // Turned around: now the farthest.
    await em.getConnection().execute('UPDATE tool_vdb_records SET embedding = ? WHERE id = ?', [vectorToBytes(q.map((x) => -x)), id], 'run');
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(id);
    await agrees([q, q.map((x) => -x)]);
    // Moved to another collection, then deleted.
    const top = (await search(store, q, 1))[0]!.id;
    await em.getConnection().execute('UPDATE tool_vdb_records SET collection_id = ? WHERE id = ?', [otherCollectionId, top], 'run');
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(top);
    await agrees([q]);
    const next = (await search(store, q, 1))[0]!.id;
    await em.getConnection().execute('DELETE FROM tool_vdb_records WHERE id = ?', [next], 'run');
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(next);
    await agrees([q]);
  });

  it('answers a search with one statement (the re-ranking, which reads the log position too) while nothing was written', async () => {
    const q = vector();
    await agrees([q]);
    await store.idle();
    const want = await search(exact, q, 10);
    const em = kernel.fork();
    const connection = em.getConnection();
    const execute = connection.execute.bind(connection);
    const statements: string[] = [];
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      statements.push(sql);
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    try {
      expect(await search(store, q, 10, em)).toEqual(want);
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(reRanking);
    } finally {
      connection.execute = execute;
    }
  });

  it('follows writes of another connection to the same file (another process)', async () => {
    const q = vector();
    await agrees([q]);
    const id = newId();
    await insert(other.fork(), [{ id, vector: q }]);
    expect((await search(store, q, 1))[0]!.id).toBe(id);
    await other.fork().getConnection().execute('DELETE FROM tool_vdb_records WHERE id = ?', [id], 'run');
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(id);
    await agrees([q]);
  });

  it('ignores a rolled-back write, and sees the writes committed after it', async () => {
    const q = vector();
    await agrees([q]);
    const rolledBack = newId();
    const connection = other.fork().getConnection();
    await connection.execute('BEGIN', [], 'run');
    await insert(other.fork(), [{ id: rolledBack, vector: q }]);
    await connection.execute('ROLLBACK', [], 'run');
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(rolledBack);
    // The committed write that follows takes the rolled-back change's place in the log.
    const committed = newId();
    await insert(other.fork(), [{ id: committed, vector: q }]);
    expect((await search(store, q, 1))[0]!.id).toBe(committed);
    await agrees([q]);
  });

  it('computes the search again when a write commits between its first pass and its re-ranking', async () => {
    const q = vector();
    await agrees([q]);
    const late = newId();
    // An entity manager whose re-ranking statement lets another connection commit first.
    const em = kernel.fork();
    const connection = em.getConnection();
    const execute = connection.execute.bind(connection);
    let interposed = 0;
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      if (interposed === 0 && reRanking.test(sql)) {
        interposed++;
        await insert(other.fork(), [{ id: late, vector: q }]);
      }
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    try {
      const hits = await search(store, q, 10, em);
      expect(interposed).toBe(1);
      expect(hits[0]!.id).toBe(late);
      expect(hits).toEqual(await search(exact, q, 10));
    } finally {
      connection.execute = execute;
    }
  });

  it('after writes since the index was last caught up, answers without waiting for a catch-up, the changed records ranked from their rows', async () => {
    const q = vector();
    await agrees([q]);
    await store.idle();
    // Writes the index has not seen: a new nearest record, the former nearest turned away, and a
    // few elsewhere. Before, the search caught up in the gate first (statements reading the log),
    // then re-ranked: queued behind every other search's catch-up on a busy connection.
    const em = other.fork();
    const nearest = newId();
    const [former] = await search(exact, q, 1);
    await insert(em, [{ id: nearest, vector: q.map((x) => x * 4) }]);
    await em.getConnection().execute('UPDATE tool_vdb_records SET embedding = ? WHERE id = ?', [vectorToBytes(q.map((x) => -x)), former!.id], 'run');
    await insert(em, [{ id: newId(), vector: vector() }, { id: newId(), vector: vector(), collection: otherCollectionId }]);
    const want = await search(exact, q, 10);
    // Catch-ups are held back until the search has answered: before, the search waited for one
    // (and this never resolved); now one only starts in the background.
    const searching = kernel.fork();
    const connection = searching.getConnection();
    const execute = connection.execute.bind(connection);
    const logRead = /^SELECT min\(seq\) AS lo, max\(seq\) AS hi FROM tool_vdb_changes$/;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const statements: string[] = [];
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      statements.push(sql);
      if (logRead.test(sql)) await released;
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    let hits;
    try {
      hits = await search(store, q, 10, searching);
      // Before its answer, only re-ranking statements ran (one, or two once it learnt how many
      // records changed), and the background catch-up's first read, held back.
      expect(statements.filter((sql) => !reRanking.test(sql) && !logRead.test(sql))).toEqual([]);
      expect(statements.filter((sql) => reRanking.test(sql)).length).toBeGreaterThan(0);
    } finally {
      release();
      connection.execute = execute;
    }
    expect(hits).toEqual(want);
    expect(hits[0]!.id).toBe(nearest);
    expect(hits.map((hit) => hit.id)).not.toContain(former!.id);
    // The index catches up in the background meanwhile, and answers the same afterwards.
    await store.idle();
    await agrees([q, q.map((x) => -x)]);
  });

  it('inside a transaction, sees that transaction’s own writes, and forgets them when it rolls back', async () => {
    const q = vector();
    await agrees([q]);
    const id = newId();
    // A transaction as `inTransaction` opens one (a fork carrying its transaction context).
    const tx = kernel.fork();
    tx.setTransactionContext(await tx.getConnection('write').begin());
    await insert(tx, [{ id, vector: q }]);
    expect((await search(store, q, 1, tx))[0]!.id).toBe(id);
    await tx.getConnection('write').rollback(tx.getTransactionContext()!);
    // The next committed write takes the rolled-back change's place in the log; it is seen.
    const committed = newId();
    await insert(other.fork(), [{ id: committed, vector: q.map((x) => x * 5) }]);
    const hits = (await search(store, q, 10)).map((hit) => hit.id);
    expect(hits[0]).toBe(committed);
    expect(hits).not.toContain(id);
    await agrees([q]);
  });

  it('rebuilds when it fell further behind than the log keeps, or the log’s triggers were lost', async () => {
    await agrees();
    // A write to this collection, then 10,001 changes elsewhere by the other connection: more than
    // the log keeps, so the first write is no longer in it when this store next looks.
    const em = other.fork();
    const q = vector();
    const id = newId();
    await insert(em, [{ id, vector: q }]);
    await em
      .getConnection()
      .execute(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10001)
         INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at)
         SELECT '00000000-0000-7000-a000-' || printf('%012d', i), ?, 'x', '[]', '{}', ?, ?, '2026-01-01', '2026-01-01' FROM n`,
        [otherCollectionId, vectorToBytes(vector()), dimension],
        'run',
      );
    const [{ n }] = (await em.getConnection().execute('SELECT count(*) AS n FROM tool_vdb_changes', [], 'all')) as Array<{ n: number }>;
    expect(n).toBeLessThanOrEqual(10000);
    expect((await search(store, q, 1))[0]!.id).toBe(id);
    await agrees([q]);
    // A lost trigger: writes go unlogged until sync recreates it and drops the indexes.
    await em.getConnection().execute('DROP TRIGGER tool_vdb_changes_delete', [], 'run');
    await em.getConnection().execute('DELETE FROM tool_vdb_records WHERE id = ?', [id], 'run');
    await store.sync(kernel.fork());
    expect((await search(store, q, 10)).map((hit) => hit.id)).not.toContain(id);
    await agrees([q]);
  });

  it('builds a large collection’s index in the background: searches answer from the mirror meanwhile, and writes during the build reach it', async () => {
    const background = new SqliteVecVectorStore({ backgroundBuildRows: 100 });
    await background.sync(kernel.fork());
    const em = kernel.fork();
    const connection = em.getConnection();
    const execute = connection.execute.bind(connection);
    // The build's page read waits until the test lets it go; a write commits while it waits.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let paged = 0;
    connection.execute = (async (sql: string, ...rest: unknown[]) => {
      if (/ORDER BY id LIMIT \d+$/.test(sql) && paged++ === 0) await held;
      return (execute as (...args: unknown[]) => Promise<unknown>)(sql, ...rest);
    }) as typeof connection.execute;
    const q = vector();
    const late = newId();
    try {
      // Answered while the build is held: from the vec0 mirror, the same records as the exact scan.
      const first = await background.search(kernel.fork(), { collectionId, vector: q, limit: 10, filter: null });
      expect(paged).toBe(1);
      const want = await search(exact, q, 10);
      expect(first.map((hit) => hit.distance)).toEqual(want.map((hit) => expect.closeTo(hit.distance, 5)));
      // A write (through the store, as the API writes) commits after the build's start.
      const tx = kernel.fork();
      await tx.getConnection().execute('BEGIN', [], 'run');
      await insert(tx, [{ id: late, vector: q }]);
      await background.upsert(tx, [{ id: late, collectionId, vector: q, tags: [], metadata: {} }]);
      await tx.getConnection().execute('COMMIT', [], 'run');
      expect((await background.search(kernel.fork(), { collectionId, vector: q, limit: 1, filter: null }))[0]!.id).toBe(late);
    } finally {
      release();
      await background.idle();
      connection.execute = execute;
    }
    // Installed, caught up with the write made during the build, and exact.
    for (const query of [q, vector(), vector()]) {
      for (const limit of [1, 10]) expect(await background.search(kernel.fork(), { collectionId, vector: query, limit, filter: null })).toEqual(await search(exact, query, limit));
    }
    expect((await background.search(kernel.fork(), { collectionId, vector: q, limit: 1, filter: null }))[0]).toEqual({ id: late, distance: expect.closeTo(0, 6) });
    await background.close();
  });

  it('searches the vec0 mirror when a collection exceeds the memory budget', async () => {
    const small = new SqliteVecVectorStore({ memoryIndexBytes: 1000 });
    // The mirror follows the store's own upserts; rows written in SQL here reach it by a sync.
    await small.sync(kernel.fork());
    const q = vector();
    const hits = await small.search(kernel.fork(), { collectionId, vector: q, limit: 10, filter: null });
    // The mirror ranks in float32 by L2 over unit vectors: the same records, distances to ~1e-6,
    // but of equal distances (a record and its scaled copy) either may come first or be cut off.
    const all = new Map((await search(exact, q, 100_000)).map((hit) => [hit.id, hit.distance]));
    const want = await search(exact, q, 10);
    expect(hits).toHaveLength(10);
    hits.forEach((hit, i) => {
      expect(hit.distance).toBeCloseTo(want[i]!.distance, 5);
      expect(all.get(hit.id)).toBeCloseTo(want[i]!.distance, 5);
    });
  });
});
