import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { startTestHost, testDatabases, transports, type TestDatabase, type TestDatabaseHandle } from '@trellis/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { settled, upload } from './knowledge.fixtures.js';

/** The same database for every host started on it (a file for SQLite), dropped at the end. */
async function durable(db: TestDatabase): Promise<{ db: TestDatabase; drop(): Promise<void> }> {
  let handle: TestDatabaseHandle;
  let dir: string | undefined;
  if (db.name === 'sqlite') {
    dir = mkdtempSync(join(tmpdir(), 'trellis-knowledge-'));
    const path = join(dir, 'kb.db');
    handle = { adapter: sqliteDatabase({ path }), url: `sqlite:${path}`, drop: async () => undefined };
  } else handle = await db.create();
  return {
    db: { name: db.name, create: async () => ({ adapter: db.name === 'sqlite' ? sqliteDatabase({ path: handle.url.slice('sqlite:'.length) }) : handle.adapter, url: handle.url, drop: async () => undefined }) },
    async drop() {
      await handle.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each(testDatabases())('knowledge ingestion across restarts on $name', (db) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('a source queued by one process, or left half-done by a dead one, is ingested by the next', async () => {
    const store = await durable(db);
    cleanups.push(() => store.drop());
    // A process that accepts uploads but does not ingest (like a host in front of workers).
    const first = await startTestHost(store.db, transports[0]!, { config: { knowledge: { ingestion: { enabled: false } } } });
    const { token } = await first.register();
    const kb = (await first.request('POST', '/knowledge/bases', { token, body: { name: 'Durable' } })).body;
    const queued = (await upload(first, token, kb.id, [{ name: 'a.md', type: 'text/markdown', data: '# Otters\n\nSea otters hold hands while they sleep.' }])).body.items[0];
    const stuck = (await upload(first, token, kb.id, [{ name: 'b.txt', type: 'text/plain', data: 'Axolotls regrow their limbs.' }])).body.items[0];
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await first.request('GET', `/knowledge/bases/${kb.id}/sources/${queued.id}`, { token })).body.status).toBe('queued');
    // A process that died while embedding: its step and an expired lease are what it left.
    await first.kernel.fork().getConnection().execute("UPDATE knowledge_sources SET status = 'embedding', attempts = 1, lease_until = ? WHERE id = ?", [new Date(Date.now() - 1000), stuck.id]);
    await first.close();

    const second = await startTestHost(store.db, transports[0]!, { config: { knowledge: { ingestion: { pollIntervalMs: 50 } } } });
    cleanups.push(() => second.close());
    const [a, b] = [await settled(second, token, kb.id, queued.id), await settled(second, token, kb.id, stuck.id)];
    expect([a.status, b.status]).toEqual(['ready', 'ready']);
    expect(b.attempts).toBe(2);
    const found = await second.request('POST', `/knowledge/bases/${kb.id}/retrieve`, { token, body: { query: 'otters sleep' } });
    expect(found.body.items[0].citation).toMatchObject({ sourceId: queued.id, headingPath: ['Otters'] });
  });
});
