import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { expectDense, wf } from './runs.fixtures.js';
import { readNdjson, readSse, ScriptedGateway } from './support/run-clients.js';

let counter = 0;

// The Block API's run endpoints share the run engine, its event stream and its records.
describe.each(testDatabases())('block runs on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())] });
      owner = await actor(t);
    });
    afterAll(() => t?.close());

    async function block(content: unknown, projectId?: string) {
      const project = projectId ?? (await createProject(t, owner.token)).id;
      const r = await t.request('POST', `/block/${project}`, { token: owner.token, body: { name: `Flow ${++counter}`, type: 'workflow', content } });
      if (r.status !== 201) throw new Error(`block create failed: ${r.status} ${r.text}`);
      return { id: r.body.id as string, projectId: project };
    }

    it('POST /block/:pageId/run streams the page\'s current content; the run is listed for the block and its project', async () => {
      const b = await block(wf.doc(wf.input('who'), wf.llm('hi', 'echo', 'hello {{ who }}'), wf.output('out', '{{ hi }}')));
      const { events, status } = await readSse(`${t.url}/block/${b.id}/run`, { token: owner.token, body: { inputs: { who: 'Lin' } } });
      expect(status).toBe(200);
      expectDense(events.map((e) => e.seq));
      expect(events.at(-1)).toMatchObject({ type: 'run_complete', data: { completedBlocks: 3 } });
      const runId = events[0]!.data.runId;
      expect(events[0]!.data.documentId).toBe(b.id);
      const list = await t.request('GET', `/project/${b.projectId}/runs`, { token: owner.token });
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 1, items: [{ id: runId, documentId: b.id, source: 'block', output: 'Echo: hello Lin ' }] });
      const byDoc = await t.request('GET', `/documents/${b.id}/runs/${runId}`, { token: owner.token });
      expect(byDoc.body).toMatchObject({ status: 'completed', source: 'block' });
      const missing = await t.request('POST', `/block/${b.id}/run`, { token: owner.token, body: {} });
      expect(missing.status).toBe(422);
    });

    it('POST /block/test runs inline content and stores nothing', async () => {
      const project = await createProject(t, owner.token);
      const { events } = await readNdjson(`${t.url}/block/test`, { token: owner.token, body: { format: 'ndjson', projectId: project.id, inputs: { x: 'tested' }, content: wf.doc(wf.input('x'), wf.output('o', 'got {{ x }}')) } });
      expect(events.at(-1)!.data.sessions.map((s: { output: string }) => s.output)).toEqual(['tested', 'got tested']);
      const quiet = await t.request('POST', '/block/test', { token: owner.token, body: { stream: false, inputs: {}, content: wf.doc(wf.output('o', 'plain')) } });
      expect(quiet.status).toBe(200);
      expect(quiet.body).toMatchObject({ status: 'completed', output: 'plain', documentId: null });
      expect((await t.request('GET', `/project/${project.id}/runs`, { token: owner.token })).body.total).toBe(0);
      const bad = await t.request('POST', '/block/test', { token: owner.token, body: { inputs: { y: 1 }, content: wf.doc(wf.input('x', { required: true })) } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_inputs');
    });

    it('deploy → next-version → API run of a pinned version, anonymously for a public deployment; runId attaches', async () => {
      const b = await block(wf.doc(wf.input('n', { type: 'number' }), wf.output('out', 'v1 {{ n }}')));
      const v1 = await t.request('POST', `/block/${b.id}/deploy`, { token: owner.token, body: { access: 'public' } });
      expect(v1.status).toBeLessThan(300);
      const next = await t.request('GET', `/block/${b.id}/next-version`, { token: owner.token });
      expect(next.body.version ?? next.body.nextVersion).toBe('2');
      await t.request('PUT', `/block/${b.id}`, { token: owner.token, body: { content: wf.doc(wf.input('n', { type: 'number' }), wf.output('out', 'v2 {{ n }}')) } });
      const v2 = await t.request('POST', `/block/${b.id}/deploy`, { token: owner.token, body: { access: 'public' } });
      expect(v2.status).toBeLessThan(300);

      const latest = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, inputs: { n: 7 } } });
      expect(latest.status, latest.text).toBe(200);
      expect(latest.body).toMatchObject({ status: 'completed', output: 'v2 7' });
      const pinned = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, inputs: { n: 1 }, version: '1' } });
      expect(pinned.body).toMatchObject({ status: 'completed', output: 'v1 1' });
      const wrongType = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, inputs: { n: 'one' } } });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.error).toBe('invalid_inputs');
      const unknownVersion = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, version: '9' } });
      expect(unknownVersion.status).toBe(404);

      // Attach to the finished run: its whole log, or its result.
      const attached = await readNdjson(`${t.url}/block/${b.id}/api`, { token: owner.token, body: { format: 'ndjson', runId: pinned.body.runId } });
      expect(attached.events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete']);
      const result = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, runId: pinned.body.runId } });
      expect(result.body).toMatchObject({ runId: pinned.body.runId, output: 'v1 1' });
      const runs = await t.request('GET', `/project/${b.projectId}/runs`, { token: owner.token });
      expect(runs.body.items.filter((r: { source: string }) => r.source === 'api').map((r: { version: string }) => r.version).sort()).toEqual(['1', '2']);
    });

    it('checks API run inputs against the deployment\'s input definitions when it has them', async () => {
      const b = await block(wf.doc(wf.input('topic'), wf.output('out', 'about {{ topic }}')));
      await t.request('POST', `/block/${b.id}/deploy`, { token: owner.token, body: { access: 'public' } });
      const set = await t.request('PUT', `/block/${b.id}/deployment`, { token: owner.token, body: { inputs: [{ name: 'topic', type: 'string', required: true, description: 'What about' }] } });
      expect(set.status).toBe(200);
      const missing = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, inputs: {} } });
      expect(missing.status).toBe(400);
      expect(missing.body).toMatchObject({ error: 'invalid_inputs', details: [{ field: 'inputs.topic', constraint: 'required' }] });
      const ok = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false, inputs: { topic: 'bees' } } });
      expect(ok.body).toMatchObject({ status: 'completed', output: 'about bees' });
    });

    it('a private deployment refuses anonymous and outside callers', async () => {
      const b = await block(wf.doc(wf.output('out', 'secret')));
      await t.request('POST', `/block/${b.id}/deploy`, { token: owner.token, body: { access: 'private' } });
      const anonymous = await t.request('POST', `/block/${b.id}/api`, { body: { stream: false } });
      expect(anonymous.status).toBe(401);
      const outsider = await actor(t);
      const other = await t.request('POST', `/block/${b.id}/api`, { token: outsider.token, body: { stream: false } });
      expect(other.status).toBe(404);
      const mine = await t.request('POST', `/block/${b.id}/api`, { token: owner.token, body: { stream: false } });
      expect(mine.body).toMatchObject({ status: 'completed', output: 'secret' });
    });
  });
});
