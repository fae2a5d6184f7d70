import { parseVdbFilter, vectorStoreServiceIdentifier } from '@trellis/core';
import { candidatesOf, SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vdbContract } from './tools-vdb.fixtures.js';

// The vector database with the host's defaults: sqlite-vec on SQLite, the in-process exact scan on
// PostgreSQL (whose machine has no pgvector), on both transports.
describe.each(testDatabases())('tool service vector database on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport);
    });
    afterAll(() => t?.close());

    it('uses sqlite-vec on SQLite and the exact scan on PostgreSQL', async () => {
      expect(t.kernel.get(vectorStoreServiceIdentifier).name).toBe(db.name === 'sqlite' ? 'sqlite-vec' : 'exact-scan');
    });

    it.skipIf(db.name !== 'sqlite')('keeps the vec0 mirror of unfiltered searches in step with the records, and re-syncs it (SQLite)', async () => {
      const { token } = await t.register();
      const name = `Mirror_${transport}`;
      const a = await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'first mirrored record' } });
      const b = await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'second mirrored record' } });
      const connection = t.kernel.fork().getConnection();
      const mirrored = async () => ((await connection.execute('SELECT record_id FROM tool_vdb_unit_384', [], 'all')) as Array<{ record_id: string }>).map((r) => r.record_id);
      expect(await mirrored()).toEqual(expect.arrayContaining([a.body.id, b.body.id]));
      await t.request('DELETE', `/tool/vdb/${name}/${a.body.id}`, { token });
      expect(await mirrored()).not.toContain(a.body.id);
      // Rows changed behind the store's back (bulk loads, another store) are caught up by sync.
      await connection.execute('DELETE FROM tool_vdb_unit_384 WHERE record_id = ?', [b.body.id]);
      await connection.execute("INSERT INTO tool_vdb_unit_384 (record_id, collection_id, embedding) VALUES ('00000000-0000-7000-8000-00000000dead', 'x', ?)", [Buffer.alloc(384 * 4)]);
      const store = t.kernel.get(vectorStoreServiceIdentifier) as unknown as { sync(em: unknown): Promise<void> };
      await store.sync(t.kernel.fork());
      expect(await mirrored()).toContain(b.body.id);
      expect(await mirrored()).not.toContain('00000000-0000-7000-8000-00000000dead');
      const found = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'second mirrored record' } });
      expect(found.body.items.map((r: { id: string }) => r.id)).toEqual([b.body.id]);
      // The mirror holds unit vectors; a zero vector (no words) is kept apart and ranks last, at distance 1.
      const [stored] = (await connection.execute('SELECT vec_to_json(embedding) AS v FROM tool_vdb_unit_384 WHERE record_id = ?', [b.body.id], 'all')) as Array<{ v: string }>;
      expect(Math.hypot(...(JSON.parse(stored!.v) as number[]))).toBeCloseTo(1, 5);
      const zero = await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: '!!!' } });
      expect(await mirrored()).not.toContain(zero.body.id);
      expect(await connection.execute('SELECT record_id FROM tool_vdb_zero WHERE record_id = ?', [zero.body.id], 'all')).toHaveLength(1);
      const ranked = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'second mirrored record', query: { limit: 5 } } });
      expect(ranked.body.items.map((r: { id: string; distance: number }) => [r.id, r.distance])).toEqual([
        [b.body.id, expect.closeTo(0, 5)],
        [zero.body.id, 1],
      ]);
      await t.request('DELETE', `/tool/vdb/${name}/${zero.body.id}`, { token });
      expect(await connection.execute('SELECT record_id FROM tool_vdb_zero WHERE record_id = ?', [zero.body.id], 'all')).toHaveLength(0);
      // A mirror of an earlier version (raw vectors, cosine) is dropped and rebuilt as unit vectors.
      await connection.execute('CREATE VIRTUAL TABLE tool_vdb_vec_384 USING vec0(record_id text primary key, collection_id text partition key, embedding float[384] distance_metric=cosine)', [], 'run');
      await store.sync(t.kernel.fork());
      expect(await connection.execute("SELECT name FROM sqlite_master WHERE name = 'tool_vdb_vec_384'", [], 'all')).toHaveLength(0);
    });

    it.skipIf(db.name !== 'sqlite')('narrows filtered searches with the term index, kept in step by triggers on every write (SQLite)', async () => {
      const { token } = await t.register();
      const name = `Terms_${transport}`;
      const connection = t.kernel.fork().getConnection();
      const termsOf = async (id: string) => ((await connection.execute('SELECT term FROM tool_vdb_terms WHERE record_id = ? ORDER BY term', [id], 'all')) as Array<{ term: string }>).map((r) => r.term);
      const ids = async (filter: unknown, limit = 10) => {
        const found = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'alpha', query: { filter, limit } } });
        expect(found.status, found.text).toBe(200);
        return found.body.items.map((r: { id: string }) => r.id).sort();
      };
      const a = (await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'alpha one', tags: ['x', 7], metadata: { lang: 'en', year: 2020, list: ['p', 'q'], deep: { k: 'v' } } } })).body.id;
      const b = (await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'alpha two', tags: ['y'], metadata: { lang: 'zh' } } })).body.id;
      // Strings only: numbers, nested keys and the tag 7 are left to the full filter.
      expect(await termsOf(a)).toEqual(['a:list=p', 'a:list=q', 'm:lang=en', 't:x']);
      expect(await ids({ tags: 'x' })).toEqual([a]);
      expect(await ids({ 'metadata.list': { $contains: 'q' } })).toEqual([a]);
      expect(await ids({ tags: { $in: ['x', 'y'] }, 'metadata.lang': 'zh' })).toEqual([b]);
      // A partial update moves the record's terms: the old tag no longer finds it, the new one does.
      expect((await t.request('PATCH', `/tool/vdb/${name}/${a}`, { token, body: { tags: ['y'], metadata: { lang: 'zh' } } })).status).toBe(200);
      expect(await termsOf(a)).toEqual(['m:lang=zh', 't:y']);
      expect(await ids({ tags: 'x' })).toEqual([]);
      expect(await ids({ tags: 'y', 'metadata.lang': 'zh' })).toEqual([a, b].sort());
      // Exactly `limit` hits when enough match.
      expect(await ids({ tags: 'y' }, 1)).toHaveLength(1);
      await t.request('DELETE', `/tool/vdb/${name}/${b}`, { token });
      expect(await termsOf(b)).toEqual([]);
      // Lost index (dropped trigger, emptied table): sync rebuilds it from the records.
      await connection.execute('DROP TRIGGER tool_vdb_terms_update', [], 'run');
      await connection.execute('DELETE FROM tool_vdb_terms', [], 'run');
      const store = t.kernel.get(vectorStoreServiceIdentifier) as SqliteVecVectorStore;
      await store.sync(t.kernel.fork());
      expect(await termsOf(a)).toEqual(['m:lang=zh', 't:y']);
      expect(await ids({ tags: 'y' })).toEqual([a]);
      expect((await t.request('PATCH', `/tool/vdb/${name}/${a}`, { token, body: { tags: ['z'] } })).status).toBe(200);
      expect(await ids({ tags: 'z' })).toEqual([a]);
    });

    vdbContract(
      () => t,
      () => t.register(),
    );
  });
});

describe('term index candidates of a filter (sqlite-vec store)', () => {
  const of = (filter: unknown) => candidatesOf(parseVdbFilter(filter)!);
  it('names a necessary condition only for string tags and string top-level metadata', () => {
    expect(of({ tags: 'a' })).toEqual({ kind: 'any', terms: new Set(['t:a']) });
    expect(of({ tags: { $in: ['a', 'b'] } })).toEqual({ kind: 'any', terms: new Set(['t:a', 't:b']) });
    expect(of({ 'metadata.lang': { $in: ['en', 'fr'] } })).toEqual({ kind: 'any', terms: new Set(['m:lang=en', 'm:lang=fr']) });
    expect(of({ 'metadata.year': { $gte: 2020 }, tags: 'a' })).toEqual({ kind: 'any', terms: new Set(['t:a']) });
    expect(of({ tags: { $all: ['a', 'b'] } })).toMatchObject({ kind: 'and' });
    for (const none of [{ tags: { $nin: ['a'] } }, { 'metadata.year': 2020 }, { 'metadata.a.b': 'x' }, { $not: { tags: 'a' } }, { $or: [{ tags: 'a' }, { 'metadata.year': 1 }] }, { 'metadata.x': { $exists: true } }, { tags: 3 }]) {
      expect(of(none), JSON.stringify(none)).toBeNull();
    }
  });
  it('can be turned off', () => {
    expect(new SqliteVecVectorStore({ termIndex: false }).name).toBe('sqlite-vec');
  });
});
