import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDocx, buildPdf, settled, upload } from './knowledge.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson } from './support/run-clients.js';

const html = '<html><body><h1>Zoo</h1><h2>Reptiles</h2><p>The tuatara has a third eye on top of its head.</p></body></html>';
const retrieval = (name: string, knowledgeBase: string, query: string, attrs: Record<string, unknown> = {}) => ({ type: 'retrievalBlock', attrs: { id: `kb-${name}`, name, knowledgeBase, query, ...attrs } });

// Upload → ingest → a workflow's retrieval block, end to end over HTTP; and the `knowledge` action of
// an AI tool (what bots call), through a tool block.
describe.each(testDatabases())('knowledge in workflows on $name', (db) => {
  let t: TestHost;
  let token: string;
  let baseId: string;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    t = await startTestHost(db, transports[0]!, { config: { knowledge: { ingestion: { pollIntervalMs: 50 } } } });
    ({ token } = await t.register());
    baseId = (await t.request('POST', '/knowledge/bases', { token, body: { name: 'Zoo', chunking: { chunkTokens: 40, overlapTokens: 0, parentTokens: 120 } } })).body.id;
    const sent = await upload(t, token, baseId, [
      { name: 'zoo.pdf', type: 'application/pdf', data: await buildPdf(['Opening hours are nine to five.', 'Penguins are fed at three in the afternoon.']) },
      { name: 'care.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', data: await buildDocx('Animal care', ['Giraffes eat acacia leaves from tall feeders.']) },
      { name: 'zoo.html', type: 'text/html', data: html },
    ]);
    for (const source of sent.body.items) {
      const done = await settled(t, token, baseId, source.id);
      expect(done.status, done.error).toBe('ready');
      ids[source.name] = source.id;
    }
  });
  afterAll(() => t?.close());

  it('a retrieval block finds passages with citations, shows them in the events, and feeds a later block', async () => {
    const content = wf.doc(wf.input('q'), retrieval('facts', baseId, 'When are {{ q }} fed?', { limit: 2 }), wf.output('out', 'Context:\n{{ facts.context }}'));
    const { documentId } = await workflowDocument(t, token, content);
    const { events, status } = await readNdjson(`${t.url}/documents/${documentId}/run`, { token, body: { inputs: { q: 'penguins' }, format: 'ndjson' } });
    expect(status).toBe(200);
    expectDense(events.map((e) => e.seq));
    const tools = events.filter((e) => e.type.startsWith('tool_'));
    expect(tools.map((e) => [e.type, e.data.blockId, e.data.toolName ?? null])).toEqual([
      ['tool_start', 'kb-facts', 'knowledge_retrieve'],
      ['tool_result', 'kb-facts', null],
    ]);
    const [first] = tools[1]!.data.result.passages;
    expect(tools[1]!.data.result.query).toBe('When are penguins fed?');
    expect(first.text).toContain('Penguins are fed at three');
    expect(first.citation).toMatchObject({ sourceId: ids['zoo.pdf'], sourceName: 'zoo.pdf', page: 2 });
    const complete = events.at(-1)!;
    expect(complete.type).toBe('run_complete');
    expect(complete.data.sessions.at(-1).output).toMatch(/^Context:\n\[1\] \(zoo\.pdf, page 2\)\nPenguins are fed at three/);
  });

  it('a missing knowledge base fails the block with its code, and a block without one is an invalid workflow', async () => {
    const missing = await workflowDocument(t, token, wf.doc(retrieval('x', '00000000-0000-7000-8000-000000000000', 'anything')));
    const run = await t.request('POST', `/documents/${missing.documentId}/run`, { token, body: { stream: false } });
    expect(run.body.status).toBe('failed');
    expect(JSON.stringify(run.body)).toContain('knowledge_base_not_found');
    const invalid = await workflowDocument(t, token, wf.doc({ type: 'retrievalBlock', attrs: { id: 'r', name: 'r' } }));
    const refused = await t.request('POST', `/documents/${invalid.documentId}/run`, { token, body: { stream: false } });
    expect([refused.status, refused.body.error]).toEqual([400, 'invalid_workflow']);
  });

  it('an AI tool with a knowledge action retrieves for its owner (the path bots use)', async () => {
    const created = await t.request('POST', '/ai/tools', { token, body: { name: 'zoo_kb', desc: 'Zoo handbook', actions: [{ name: 'search', type: 'knowledge', conf: { knowledgeBase: baseId } }] } });
    expect(created.status, created.text).toBe(201);
    const bad = await t.request('POST', '/ai/tools', { token, body: { name: 'bad', actions: [{ name: 'search', type: 'knowledge', conf: {} }] } });
    expect([bad.status, bad.body.error]).toEqual([400, 'invalid_tool_action']);
    const content = wf.doc(wf.input('q'), wf.tool('found', created.body.id, 'search', { query: '{{ q }}', limit: 1 }), wf.output('out', '{{ found }}'));
    const { documentId } = await workflowDocument(t, token, content);
    const run = await t.request('POST', `/documents/${documentId}/run`, { token, body: { stream: false, inputs: { q: 'third eye reptile' } } });
    expect(run.body.status, run.text).toBe('completed');
    const result = run.body.output;
    expect(result.passages).toHaveLength(1);
    expect(result.passages[0]).toMatchObject({ ref: 1, citation: { sourceName: 'zoo.html', headingPath: ['Zoo', 'Reptiles'] } });
    expect(result.passages[0].text).toContain('tuatara');
    // Another user's tool cannot reach this team's base.
    const other = await t.register();
    const theirs = await t.request('POST', '/ai/tools', { token: other.token, body: { name: 'peek', actions: [{ name: 'search', type: 'knowledge', conf: { knowledgeBase: baseId } }] } });
    const peek = await workflowDocument(t, other.token, wf.doc(wf.tool('found', theirs.body.id, 'search', { query: 'tuatara' })));
    const refused = await t.request('POST', `/documents/${peek.documentId}/run`, { token: other.token, body: { stream: false } });
    expect(refused.body.status).toBe('failed');
    expect(JSON.stringify(refused.body)).toContain('knowledge_base_not_found');
  });
});
