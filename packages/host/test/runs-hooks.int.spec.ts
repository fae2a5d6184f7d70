import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide, type TrellisHooks } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually, type Actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { ScriptedGateway } from './support/run-clients.js';

type RunHook = 'run.started' | 'run.blockFinished' | 'run.waiting' | 'run.finished';
type Seen = { [K in RunHook]: { name: K; payload: TrellisHooks[K] } }[RunHook];

/**
 * The run lifecycle hooks an embedder subscribes to (`kernel.hooks.on`): each fires once, after
 * the step it announces was stored, with the run's subject and the step's fields.
 */
describe.each(testDatabases())('run lifecycle hooks on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  const seen: Seen[] = [];
  beforeAll(async () => {
    t = await startTestHost(db, 'node', { adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())] });
    owner = await actor(t);
    for (const name of ['run.started', 'run.blockFinished', 'run.waiting', 'run.finished'] as const) {
      t.kernel.hooks.on(name, (payload) => void seen.push({ name, payload } as Seen));
    }
  });
  afterAll(() => t?.close());

  const of = (runId: string) => seen.filter((s) => s.payload.runId === runId);
  const run = async (content: unknown, body: Record<string, unknown> = {}) => {
    const { documentId, projectId } = await workflowDocument(t, owner.token, content);
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, ...body } });
    expect(r.status).toBe(200);
    return { documentId, projectId, runId: r.body.runId as string, result: r.body };
  };
  const subject = (ids: { documentId: string; projectId: string; runId: string }) => ({
    runId: ids.runId,
    documentId: ids.documentId,
    projectId: ids.projectId,
    teamId: expect.any(String),
    userId: owner.userId,
    source: 'document',
    version: null,
  });

  it('a completed run: started, one blockFinished per block in order, finished with its output and usage', async () => {
    const ids = await run(wf.doc(wf.input('topic'), wf.llm('say', 'echo', 'hi {{ topic }}'), wf.output('out', '{{ say }}')), { inputs: { topic: 'moss' } });
    const hooks = await eventually(async () => of(ids.runId), (h) => h.some((s) => s.name === 'run.finished'));
    expect(hooks.map((h) => h.name)).toEqual(['run.started', 'run.blockFinished', 'run.blockFinished', 'run.blockFinished', 'run.finished']);
    expect(hooks[0]!.payload).toEqual(subject(ids));
    const blocks = hooks.filter((h) => h.name === 'run.blockFinished').map((h) => h.payload as TrellisHooks['run.blockFinished']);
    expect(blocks.map((b) => [b.blockId, b.status])).toEqual([['in-topic', 'completed'], ['llm-say', 'completed'], ['out-out', 'completed']]);
    for (const block of blocks) {
      expect(block).toMatchObject(subject(ids));
      expect(block.durationMs).toBeGreaterThanOrEqual(0);
    }
    const finished = hooks.at(-1)!.payload as TrellisHooks['run.finished'];
    expect(finished).toMatchObject({ ...subject(ids), status: 'completed', output: 'Echo: hi moss ', error: null, usage: { models: { echo: { calls: 1 } } } });
    expect(finished.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('a failed run: the failed block is finished with status failed, the run with its error', async () => {
    const ids = await run(wf.doc(wf.input('topic'), wf.llm('say', 'no-such-model', 'hi'), wf.output('out', 'never')));
    const hooks = await eventually(async () => of(ids.runId), (h) => h.some((s) => s.name === 'run.finished'));
    expect(hooks.map((h) => h.name)).toEqual(['run.started', 'run.blockFinished', 'run.blockFinished', 'run.finished']);
    expect(hooks.slice(1, 3).map((h) => (h.payload as TrellisHooks['run.blockFinished']))).toMatchObject([
      { blockId: 'in-topic', status: 'completed' },
      { blockId: 'llm-say', status: 'failed' },
    ]);
    expect(hooks.at(-1)!.payload).toMatchObject({ ...subject(ids), status: 'failed', output: null, error: { code: 'model_not_found' } });
  });

  it('a waiting run, then cancelled: waiting with the question, then the ask block fails and the run finishes cancelled', async () => {
    const ids = await run(wf.doc(wf.input('name'), wf.ask('colour', 'Which colour?'), wf.output('out', '{{ colour }}')), { inputs: { name: 'Ada' } });
    expect(ids.result.status).toBe('waiting');
    const paused = await eventually(async () => of(ids.runId), (h) => h.some((s) => s.name === 'run.waiting'));
    expect(paused.map((h) => h.name)).toEqual(['run.started', 'run.blockFinished', 'run.waiting']);
    expect(paused[1]!.payload).toMatchObject({ blockId: 'in-name', status: 'completed' });
    expect(paused[2]!.payload).toEqual({ ...subject(ids), blockId: 'ask-colour', question: 'Which colour?' });

    const cancelled = await t.request('POST', `/documents/${ids.documentId}/runs/${ids.runId}/cancel`, { token: owner.token });
    expect(cancelled.status).toBe(202);
    const hooks = await eventually(async () => of(ids.runId), (h) => h.some((s) => s.name === 'run.finished'));
    expect(hooks.map((h) => h.name)).toEqual(['run.started', 'run.blockFinished', 'run.waiting', 'run.blockFinished', 'run.finished']);
    expect(hooks[3]!.payload).toMatchObject({ ...subject(ids), blockId: 'ask-colour', status: 'failed' });
    expect(hooks[4]!.payload).toMatchObject({ ...subject(ids), status: 'cancelled', error: { code: 'run_cancelled' } });
  });

  it('a running run cancelled from another request: its block fails, the run finishes cancelled', async () => {
    const { documentId, projectId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('ticks', 'slow', 'count')));
    const started = t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    const runs = await eventually(() => t.request('GET', `/documents/${documentId}/runs`, { token: owner.token }), (r) => r.body.items?.[0]?.status === 'running');
    const runId = runs.body.items[0].id as string;
    expect((await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token })).status).toBe(202);
    expect((await started).body).toMatchObject({ runId, status: 'cancelled' });
    const hooks = await eventually(async () => of(runId), (h) => h.some((s) => s.name === 'run.finished'));
    expect(hooks.map((h) => h.name)).toEqual(['run.started', 'run.blockFinished', 'run.finished']);
    expect(hooks[1]!.payload).toMatchObject({ ...subject({ documentId, projectId, runId }), blockId: 'llm-ticks', status: 'failed' });
    expect(hooks[2]!.payload).toMatchObject({ status: 'cancelled', error: { code: 'run_cancelled' } });
  });
});
