import { IngestionService, preparedStatementsServiceIdentifier } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildDocx, buildPdf, settled, upload } from './knowledge.fixtures.js';

const html = `<!doctype html><html><head><title>Field guide</title><style>p{color:red}</style><script>var secret = "nope";</script></head>
<body><h1>Field guide</h1><h2>Marsupials</h2><p>The quokka is a small marsupial that lives on Rottnest Island and smiles for photographs.</p>
<h2>Birds</h2><p>The kookaburra laughs at dawn across the eucalyptus forest.</p></body></html>`;

describe.each(testDatabases())('knowledge bases on $name', (db) => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost(db, transports[0]!, { config: { knowledge: { ingestion: { pollIntervalMs: 50 } } } });
  });
  afterAll(() => t?.close());

  async function base(token: string, body: Record<string, unknown> = {}) {
    const r = await t.request('POST', '/knowledge/bases', { token, body: { name: 'Guide', chunking: { chunkTokens: 40, overlapTokens: 5, parentTokens: 200 }, ...body } });
    expect(r.status, r.text).toBe(201);
    return r.body as { id: string; embedder: string; dimension: number };
  }

  it('looks for ingestion work with one prepared read, and writes nothing, while no source waits', async () => {
    // First in the file: no source exists yet. The background poll runs meanwhile (every 50 ms),
    // so only the calls made with this test's manager are counted.
    const em = t.kernel.fork();
    const prepared = t.kernel.container.get(preparedStatementsServiceIdentifier);
    const reads = vi.spyOn(prepared, 'first');
    const updates = vi.spyOn(em, 'nativeUpdate');
    const finds = vi.spyOn(em, 'findOne');
    try {
      expect(await t.kernel.container.get(IngestionService).claim(em)).toBeNull();
      expect(reads.mock.calls.filter((call) => call[2] === em).map(([statement]) => statement.name)).toEqual(['knowledge.source_waiting']);
      expect([updates.mock.calls.length, finds.mock.calls.length]).toEqual([0, 0]);
    } finally {
      reads.mockRestore();
    }
  });

  it('ingests a PDF, a DOCX and an HTML page, and retrieves passages with citations', async () => {
    const { token } = await t.register();
    const kb = await base(token);
    expect(kb).toMatchObject({ embedder: expect.stringMatching(/^hashing-v1-384/), dimension: 384 });
    const pdf = await buildPdf(['Page one explains how zebras sleep standing up in the savanna.', 'Page two explains refunds: refunds take five business days.']);
    const docx = await buildDocx('Security policy', ['Passwords are hashed with argon2id before storage.', 'Sessions expire after twelve hours of inactivity.']);
    const sent = await upload(t, token, kb.id, [
      { name: 'handbook.pdf', type: 'application/pdf', data: pdf },
      { name: 'policy.docx', type: 'application/octet-stream', data: docx },
      { name: 'guide.html', type: 'text/html', data: html },
    ], { team: 'support' });
    expect(sent.status, sent.text).toBe(202);
    expect(sent.body.items.map((s: any) => [s.name, s.mediaType, s.status])).toEqual([
      ['handbook.pdf', 'application/pdf', 'queued'],
      ['policy.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'queued'],
      ['guide.html', 'text/html', 'queued'],
    ]);
    const [pdfSource, docxSource, htmlSource] = await Promise.all(sent.body.items.map((s: any) => settled(t, token, kb.id, s.id)));
    expect(pdfSource).toMatchObject({ status: 'ready', error: null, progress: { parsed: 2 }, metadata: { team: 'support' } });
    expect(pdfSource.progress.embedded).toBe(pdfSource.progress.chunks);
    expect(docxSource.status).toBe('ready');
    expect(htmlSource.status).toBe('ready');

    const ask = async (query: string, extra: Record<string, unknown> = {}) => {
      const r = await t.request('POST', `/knowledge/bases/${kb.id}/retrieve`, { token, body: { query, limit: 3, ...extra } });
      expect(r.status, r.text).toBe(200);
      return r.body.items as any[];
    };
    const [refund] = await ask('how many days do refunds take');
    expect(refund.text).toContain('refunds take five business days');
    expect(refund.citation).toMatchObject({ sourceId: pdfSource.id, sourceName: 'handbook.pdf', page: 2 });
    expect(refund.match.keywordRank).not.toBeNull();
    expect(refund.match.vectorRank).not.toBeNull();

    const [password] = await ask('argon2id password hashing');
    expect(password.text).toContain('Passwords are hashed with argon2id');
    expect(password.citation).toMatchObject({ sourceName: 'policy.docx', headingPath: ['Security policy'], page: null });
    expect(password.citation.end).toBeGreaterThan(password.citation.start);

    const [quokka] = await ask('quokka marsupial island');
    expect(quokka.text).toContain('quokka is a small marsupial');
    expect(quokka.text).not.toContain('nope');
    expect(quokka.citation.headingPath).toEqual(['Field guide', 'Marsupials']);

    // Each method alone, a metadata filter, and a threshold.
    expect((await ask('zebras', { mode: 'keyword' }))[0].citation.page).toBe(1);
    expect((await ask('zebras sleep standing', { mode: 'vector' }))[0].citation.sourceId).toBe(pdfSource.id);
    expect(await ask('zebras', { filter: { 'metadata.team': 'sales' } })).toEqual([]);
    expect((await ask('zebras', { filter: { 'metadata.sourceId': pdfSource.id } })).length).toBeGreaterThan(0);
    expect(await ask('zebras', { mode: 'keyword', filter: { 'metadata.sourceId': docxSource.id } })).toEqual([]);
    // Scores are in (0, 1]: the first of a single ranking scores 1, the threshold drops the rest.
    const both = await ask('zebras refunds', { mode: 'keyword' });
    expect(both.length).toBe(2);
    expect(both[0].score).toBe(1);
    expect(await ask('zebras refunds', { mode: 'keyword', minScore: 1 })).toEqual([both[0]]);

    const listed = await t.request('GET', `/knowledge/bases/${kb.id}/sources?status=ready`, { token });
    expect(listed.body.total).toBe(3);
    const read = await t.request('GET', `/knowledge/bases/${kb.id}`, { token });
    expect(read.body.stats).toMatchObject({ sources: 3, ready: 3, failed: 0 });
  });

  it('deleting a source leaves no chunk, vector or keyword row behind', async () => {
    const { token } = await t.register();
    const kb = await base(token);
    const sent = await upload(t, token, kb.id, [
      { name: 'a.md', type: 'text/markdown', data: '# Alpha\n\nThe walrus naps on the ice floe near Svalbard.' },
      { name: 'b.txt', type: 'text/plain', data: 'The pelican fishes in the harbour every morning.' },
    ]);
    const [a, b] = await Promise.all(sent.body.items.map((s: any) => settled(t, token, kb.id, s.id)));
    expect([a.status, b.status]).toEqual(['ready', 'ready']);
    const connection = t.kernel.fork().getConnection();
    const count = async (sql: string, params: unknown[]) => Number(((await connection.execute(sql, params, 'all')) as Array<{ n: number | string }>)[0]!.n);
    const chunkIds = async (sourceId: string) => ((await connection.execute('SELECT id FROM knowledge_chunks WHERE source_id = ?', [sourceId], 'all')) as Array<{ id: string }>).map((r) => r.id);
    const idsA = await chunkIds(a.id);
    expect(idsA.length).toBeGreaterThan(0);
    const inList = idsA.map(() => '?').join(', ');
    expect(await count(`SELECT COUNT(*) AS n FROM tool_vdb_records WHERE id IN (${inList})`, idsA)).toBeGreaterThan(0);
    const keywordRows = () =>
      db.name === 'sqlite'
        ? count("SELECT COUNT(*) AS n FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH 'walrus'", [])
        : count("SELECT COUNT(*) AS n FROM knowledge_chunks WHERE search @@ to_tsquery('english', 'walrus')", []);
    expect(await keywordRows()).toBe(1);

    const removed = await t.request('DELETE', `/knowledge/bases/${kb.id}/sources/${a.id}`, { token });
    expect(removed.status).toBe(204);
    expect(await chunkIds(a.id)).toEqual([]);
    expect(await count(`SELECT COUNT(*) AS n FROM tool_vdb_records WHERE id IN (${inList})`, idsA)).toBe(0);
    expect(await keywordRows()).toBe(0);
    if (db.name === 'sqlite') {
      // The sqlite-vec mirror of the records, too.
      expect(await count(`SELECT COUNT(*) AS n FROM tool_vdb_unit_384 WHERE record_id IN (${inList})`, idsA)).toBe(0);
      expect(await count("SELECT COUNT(*) AS n FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH 'pelican'", [])).toBe(1);
    }
    const found = await t.request('POST', `/knowledge/bases/${kb.id}/retrieve`, { token, body: { query: 'walrus ice floe' } });
    expect(found.body.items.every((p: any) => p.citation.sourceId === b.id)).toBe(true);
    expect((await t.request('GET', `/knowledge/bases/${kb.id}/sources/${a.id}`, { token })).status).toBe(404);

    // Deleting the base takes the rest.
    expect((await t.request('DELETE', `/knowledge/bases/${kb.id}`, { token })).status).toBe(204);
    expect(await chunkIds(b.id)).toEqual([]);
    expect(await count("SELECT COUNT(*) AS n FROM tool_vdb_collections WHERE name = ?", [`kb:${kb.id}`])).toBe(0);
    expect((await t.request('GET', `/knowledge/bases/${kb.id}`, { token })).status).toBe(404);
  });

  it('re-indexes a source, and says why a file fails', async () => {
    const { token } = await t.register();
    const kb = await base(token);
    const sent = await upload(t, token, kb.id, [
      { name: 'broken.pdf', type: 'application/pdf', data: 'this is not a PDF at all' },
      { name: 'notes.csv', type: 'text/csv', data: 'animal,habitat\nnarwhal,arctic ocean\nokapi,rainforest\n' },
    ]);
    const [broken, csv] = await Promise.all(sent.body.items.map((s: any) => settled(t, token, kb.id, s.id)));
    expect(broken.status).toBe('failed');
    expect(broken.error).toMatch(/PDF file could not be read/);
    expect(csv.status).toBe('ready');
    const [narwhal] = (await t.request('POST', `/knowledge/bases/${kb.id}/retrieve`, { token, body: { query: 'narwhal' } })).body.items;
    expect(narwhal.text).toContain('animal: narwhal\nhabitat: arctic ocean');
    const again = await t.request('POST', `/knowledge/bases/${kb.id}/sources/${csv.id}/reindex`, { token });
    expect(again.status).toBe(202);
    expect(again.body.status).toBe('queued');
    const redone = await settled(t, token, kb.id, csv.id);
    expect(redone.status).toBe('ready');
    const [after] = (await t.request('POST', `/knowledge/bases/${kb.id}/retrieve`, { token, body: { query: 'narwhal' } })).body.items;
    expect(after.text).toBe(narwhal.text);
    expect(after.id).not.toBe(narwhal.id);
  });

  it('refuses bad uploads with documented errors', async () => {
    const { token } = await t.register();
    const kb = await base(token);
    expect((await upload(t, token, kb.id, [{ name: 'x.exe', type: 'application/octet-stream', data: 'MZ' }])).body.error).toBe('knowledge_unsupported_type');
    const json = await t.request('POST', `/knowledge/bases/${kb.id}/sources`, { token, body: { file: 'x' } });
    expect([json.status, json.body.error]).toEqual([400, 'knowledge_invalid_upload']);
    const badMeta = await upload(t, token, kb.id, [{ name: 'a.txt', type: 'text/plain', data: 'x' }]).then(async () => {
      const { multipart } = await import('./knowledge.fixtures.js');
      const body = await multipart([{ name: 'a.txt', type: 'text/plain', data: 'x' }]);
      const raw = new TextDecoder().decode(body.raw).replace('name="file"', 'name="metadata"\r\n\r\n[1]\r\n--' + body.contentType.split('boundary=')[1] + '\r\nContent-Disposition: form-data; name="file"');
      return t.request('POST', `/knowledge/bases/${kb.id}/sources`, { token, raw, headers: { 'content-type': body.contentType } });
    });
    expect(badMeta.body.error).toBe('knowledge_invalid_upload');
    const chunking = await t.request('POST', '/knowledge/bases', { token, body: { name: 'x', chunking: { chunkTokens: 20, overlapTokens: 20 } } });
    expect([chunking.status, chunking.body.error]).toEqual([422, 'knowledge_invalid_chunking']);
    const other = await t.register();
    expect((await t.request('GET', `/knowledge/bases/${kb.id}`, { token: other.token })).status).toBe(404);
    const refused = await t.request('POST', `/knowledge/bases/${kb.id}/sources/url`, { token, body: { url: 'http://127.0.0.1/secret' } });
    expect(refused.status).toBe(202);
    const failed = await settled(t, token, kb.id, refused.body.id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/may not connect to 127\.0\.0\.1/);
  });
});
