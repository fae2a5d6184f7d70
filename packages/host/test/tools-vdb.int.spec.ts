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
      const { vectorStoreServiceIdentifier } = await import('@trellis/core');
      expect(t.kernel.get(vectorStoreServiceIdentifier).name).toBe(db.name === 'sqlite' ? 'sqlite-vec' : 'exact-scan');
    });

    vdbContract(
      () => t,
      () => t.register(),
    );
  });
});
