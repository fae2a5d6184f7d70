import { vectorStoreServiceIdentifier } from '@trellis/core';
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
      const mirrored = async () => ((await connection.execute('SELECT record_id FROM tool_vdb_vec_384', [], 'all')) as Array<{ record_id: string }>).map((r) => r.record_id);
      expect(await mirrored()).toEqual(expect.arrayContaining([a.body.id, b.body.id]));
      await t.request('DELETE', `/tool/vdb/${name}/${a.body.id}`, { token });
      expect(await mirrored()).not.toContain(a.body.id);
      // Rows changed behind the store's back (bulk loads, another store) are caught up by sync.
      await connection.execute('DELETE FROM tool_vdb_vec_384 WHERE record_id = ?', [b.body.id]);
      await connection.execute("INSERT INTO tool_vdb_vec_384 (record_id, collection_id, embedding) VALUES ('00000000-0000-7000-8000-00000000dead', 'x', ?)", [Buffer.alloc(384 * 4)]);
      const store = t.kernel.get(vectorStoreServiceIdentifier) as unknown as { sync(em: unknown): Promise<void> };
      await store.sync(t.kernel.fork());
      expect(await mirrored()).toContain(b.body.id);
      expect(await mirrored()).not.toContain('00000000-0000-7000-8000-00000000dead');
      const found = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'second mirrored record' } });
      expect(found.body.items.map((r: { id: string }) => r.id)).toEqual([b.body.id]);
    });

    vdbContract(
      () => t,
      () => t.register(),
    );
  });
});
