import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { vectorStoreServiceIdentifier } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vdbContract } from '../../../host/test/tools-vdb.fixtures.js';
import { PgVectorStore } from '../src/index.js';

// The pgvector adapter against a real pgvector: PGlite with its `vector` extension, served over
// the PostgreSQL wire protocol by pglite-socket and reached with `pg`, as a deployment reaches its
// PostgreSQL. The application database is SQLite or PostgreSQL as usual.
let server: PGLiteSocketServer;
let db: PGlite;
let url: string;

beforeAll(async () => {
  db = await PGlite.create({ extensions: { vector } });
  server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 8 });
  await server.start();
  url = `postgres://postgres@${server.getServerConn()}/postgres`;
  // PGlite compiles and initialises PostgreSQL in WebAssembly: a few seconds when quiet, over 60 s at load 25.
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await db?.close();
});

describe('PgVectorStore', () => {
  it('runs on a real pgvector and plans an exact scan (no approximate index)', async () => {
    const store = new PgVectorStore({ url, table: 'probe_vectors', maxConnections: 1 });
    await store.start();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const version = await client.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'");
      expect(version.rows[0].extversion).toMatch(/^\d+\.\d+/);
      const indexes = await client.query("SELECT indexdef FROM pg_indexes WHERE tablename = 'probe_vectors'");
      expect(indexes.rows.map((row) => row.indexdef).join(' ')).not.toMatch(/hnsw|ivfflat/);
    } finally {
      await client.end();
      await store.close();
    }
  });
});

describe.each(testDatabases())('vector database with pgvector, application database $name', (database) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(database, transport, { config: { adapters: { vector: { store: 'pgvector', pgvectorUrl: url } } } });
    });
    afterAll(() => t?.close());

    it('binds the pgvector store', () => {
      expect(t.kernel.get(vectorStoreServiceIdentifier).name).toBe('pgvector');
    });

    vdbContract(
      () => t,
      () => t.register(),
    );
  });
});
