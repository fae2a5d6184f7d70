import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The batch insert of the vector database: many records in one request, embedded in batches,
// written in one transaction (all or nothing), found by search like records added one by one.
describe.each(testDatabases())('vector database batch insert on $name', (db) => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost(db, transports[0]!);
  });
  afterAll(() => t?.close());

  it('adds up to 1,000 records in order, and search finds them', async () => {
    const { token } = await t.register();
    const records = Array.from({ length: 300 }, (_, i) => ({ content: `batch record number ${i} about ${i % 2 ? 'herons' : 'otters'}`, tags: [i % 2 ? 'odd' : 'even'], metadata: { i } }));
    const added = await t.request('POST', '/tool/vdb/Batch/batch', { token, body: { records } });
    expect(added.status, added.text).toBe(201);
    expect(added.body.total).toBe(300);
    expect(added.body.items.map((r: any) => r.metadata.i)).toEqual(records.map((r) => r.metadata.i));
    const listed = await t.request('GET', '/tool/vdb/Batch?limit=1', { token });
    expect(listed.body.total).toBe(300);
    const found = await t.request('POST', '/tool/vdb/Batch/vector', { token, body: { content: 'batch record number 17 about herons', query: { limit: 1, filter: { tags: 'odd' } } } });
    expect(found.body.items[0]).toMatchObject({ id: added.body.items[17].id, content: records[17]!.content });
    const unfiltered = await t.request('POST', '/tool/vdb/Batch/vector', { token, body: { content: 'batch record number 42 about otters', query: { limit: 1 } } });
    expect(unfiltered.body.items[0].id).toBe(added.body.items[42].id);
  });

  it('writes nothing when one record is refused', async () => {
    const { token } = await t.register();
    const tooLong = await t.request('POST', '/tool/vdb/Refused/batch', { token, body: { records: [{ content: 'fine' }, { content: 'x'.repeat(100_001) }] } });
    expect([tooLong.status, tooLong.body.error, tooLong.body.details[0].field]).toEqual([422, 'vdb_content_too_long', 'records.1.content']);
    const badTag = await t.request('POST', '/tool/vdb/Refused/batch', { token, body: { records: [{ content: 'fine', tags: [{ nested: true }] }] } });
    expect([badTag.status, badTag.body.details[0].field]).toEqual([422, 'records.0.tags.0']);
    expect((await t.request('GET', '/tool/vdb/Refused', { token })).status).toBe(404);
    const empty = await t.request('POST', '/tool/vdb/Refused/batch', { token, body: { records: [] } });
    expect(empty.status).toBe(422);
  });
});
