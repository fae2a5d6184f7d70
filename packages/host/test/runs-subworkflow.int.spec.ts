import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { sharedDatabase, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, ScriptedGateway } from './support/run-clients.js';

/**
 * Sub-workflow blocks (docs/runs.md, "Sub-workflows") on a real host over HTTP: a 3-level chain
 * with its links and billing, cancel of the parent, the depth and cycle guards, and a parent whose
 * attempt is lost while its child runs. Every JSON answer is checked against /openapi.json.
 */

type Json = Record<string, any>;
let counter = 0;

const sub = (name: string, block: string, inputs: Record<string, unknown> = {}, attrs: Record<string, unknown> = {}) => ({
  type: 'subworkflowBlock',
  attrs: { id: `sub-${name}`, name, block, inputs, ...attrs },
});

/** Creates a workflow block page in `projectId` and deploys it; answers its id. */
async function deployed(t: TestHost, token: string, projectId: string, content: unknown | ((bid: string) => unknown)): Promise<string> {
  const created = await t.request('POST', `/block/${projectId}`, { token, body: { name: `Flow ${++counter}-${Date.now()}`, type: 'workflow', content: typeof content === 'function' ? { type: 'doc', content: [] } : content } });
  expect(created.status, created.text).toBe(201);
  const bid = created.body.id as string;
  if (typeof content === 'function') {
    const put = await t.request('PUT', `/block/${bid}`, { token, body: { content: content(bid) } });
    expect(put.status, put.text).toBe(200);
  }
  const deploy = await t.request('POST', `/block/${bid}/deploy`, { token, body: { access: 'private' } });
  expect(deploy.status, deploy.text).toBeLessThan(300);
  return bid;
}

/** grandchild: n → twice; child: n → grandchild(n) + 1; parent: n → child(n). */
async function chain(t: TestHost, token: string, projectId: string): Promise<{ grandchild: string; child: string }> {
  const grandchild = await deployed(t, token, projectId, wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('twice', 'return inputs.n * 2;'), wf.output('out', '{{ twice }}')));
  const child = await deployed(
    t,
    token,
    projectId,
    wf.doc(wf.input('n', { type: 'number', required: true }), sub('g', grandchild, { n: '{{ n }}' }), wf.code('plus', 'return blocks.g + 1;'), wf.output('out', '{{ plus }}')),
  );
  return { grandchild, child };
}

describe.each(testDatabases())('sub-workflows on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let owner: Actor;
  let payer: string;
  let other: string;
  let parentProject: string;
  let childProject: string;

  beforeAll(async () => {
    host = await startTestHost(db, 'node', { adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())], config: { runs: { maxSubworkflowDepth: 2 } } as never });
    t = host;
    owner = await actor(t);
    payer = (await t.request('POST', '/teams', { token: owner.token, body: { name: `Payer ${++counter}` } })).body.id;
    other = (await t.request('POST', '/teams', { token: owner.token, body: { name: `Other ${++counter}` } })).body.id;
    parentProject = (await createProject(t, owner.token, { access: 'private', teamId: payer })).id;
    childProject = (await createProject(t, owner.token, { access: 'private', teamId: other })).id;
  });
  afterAll(() => host?.close());

  const balanceOf = async (teamId: string) => (await host.request('GET', `/billing/subscription?teamId=${teamId}`, { token: owner.token })).body.data.balance.totalCredits as number;
  const children = async (documentId: string, runId: string) => {
    const r = await t.request('GET', `/documents/${documentId}/runs/${runId}/children`, { token: owner.token });
    expect(r.status, r.text).toBe(200);
    return r.body.items as Json[];
  };

  it('a 3-level chain completes with the right output, links each child to its parent, and bills every level to the parent\'s team', async () => {
    const { grandchild, child } = await chain(t, owner.token, childProject);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('n', { type: 'number' }), sub('c', child, { n: '{{ n }}' }), wf.output('result', 'result={{ c }}')), { id: parentProject });
    const payerBefore = await balanceOf(payer);
    const otherBefore = await balanceOf(other);

    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { n: 20 }, stream: false } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ status: 'completed', output: 'result=41' });
    expect(r.body.globalCtx.find((e: Json) => e.name === 'c').value).toBe(41);

    const parent = await t.request('GET', `/documents/${documentId}/runs/${r.body.runId}`, { token: owner.token });
    expect(parent.body).toMatchObject({ parentRunId: null, parentBlockId: null, depth: 0 });
    const [childRun, ...moreChildren] = await children(documentId, r.body.runId);
    expect(moreChildren).toEqual([]);
    expect(childRun).toMatchObject({ documentId: child, parentRunId: r.body.runId, parentBlockId: 'sub-c', depth: 1, status: 'completed', version: expect.any(String), inputs: { n: 20 }, output: 41 });
    const [grandRun] = await children(child, childRun!.id);
    expect(grandRun).toMatchObject({ documentId: grandchild, parentRunId: childRun!.id, parentBlockId: 'sub-g', depth: 2, status: 'completed', output: 40 });
    expect(await children(grandchild, grandRun!.id)).toEqual([]);

    // Three runs (creditsPerRun each, no model usage), all paid by the parent's team.
    await eventually(() => balanceOf(payer), (balance) => balance === payerBefore - 3, 'the payer charged for three runs');
    expect(await balanceOf(other)).toBe(otherBefore);
  });

  it('cancelling the parent cancels its running child', async () => {
    const slow = await deployed(t, owner.token, childProject, wf.doc(wf.llm('wait', 'hang', 'wait forever'), wf.output('out', '{{ wait }}')));
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(sub('s', slow), wf.output('out', '{{ s }}')), { id: parentProject });
    const started = await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' }, stopAfter: 2 });
    const runId = started.events[0]!.data.runId as string;
    const [childRun] = await eventually(() => children(documentId, runId), (list) => list[0]?.status === 'running', 'the child running');
    const cancel = await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
    expect(cancel.status, cancel.text).toBe(202);
    const child = await eventually(() => t.request('GET', `/documents/${slow}/runs/${childRun!.id}`, { token: owner.token }), (c) => c.body.status === 'cancelled', 'the child cancelled');
    expect(child.body.error).toMatchObject({ code: 'run_cancelled' });
    const parent = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (p) => p.body.status === 'cancelled', 'the parent cancelled');
    expect(parent.body.error).toMatchObject({ code: 'run_cancelled' });
  });

  it('a child failure fails the parent block with subworkflow_failed, unless its policy says otherwise', async () => {
    const broken = await deployed(t, owner.token, childProject, wf.doc(wf.code('boom', 'throw new Error("no luck");')));
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(sub('b', broken), wf.output('out', 'after {{ b }}')), { id: parentProject });
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.body).toMatchObject({ status: 'failed', error: { code: 'subworkflow_failed' } });
    expect(r.body.error.message).toContain('sandbox_error');

    const tolerant = await workflowDocument(t, owner.token, wf.doc(sub('b', broken, {}, { fallback: { value: 'spare' } }), wf.output('out', 'after {{ b }}')), { id: parentProject });
    const ok = await t.request('POST', `/documents/${tolerant.documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(ok.body).toMatchObject({ status: 'completed', output: 'after spare' });
    expect(ok.body.sessions[0]).toMatchObject({ status: 'completed', fallback: true, attempts: [{ attempt: 1, code: 'subworkflow_failed' }] });
  });

  it('refuses a cycle with subworkflow_cycle and a chain deeper than runs.maxSubworkflowDepth with subworkflow_depth_exceeded', async () => {
    const self = await deployed(t, owner.token, childProject, (bid: string) => wf.doc(sub('me', bid)));
    const cycle = await t.request('POST', `/block/${self}/api`, { token: owner.token, body: { stream: false } });
    expect(cycle.body).toMatchObject({ status: 'failed', error: { code: 'subworkflow_cycle' } });

    // parent (0) → child (1) → grandchild (2) is the limit; one more level fails at depth 2.
    const { child } = await chain(t, owner.token, childProject);
    const middle = await deployed(t, owner.token, childProject, wf.doc(wf.input('n', { type: 'number' }), sub('c', child, { n: '{{ n }}' }), wf.output('out', '{{ c }}')));
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(sub('m', middle, { n: 1 })), { id: parentProject });
    const deep = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(deep.body).toMatchObject({ status: 'failed', error: { code: 'subworkflow_failed' } });
    const [m] = await children(documentId, deep.body.runId);
    const [c] = await children(middle, m!.id);
    expect(c).toMatchObject({ depth: 2, status: 'failed', error: { code: 'subworkflow_depth_exceeded' } });
    expect(await children(child, c!.id)).toEqual([]);
  });

  it('refuses bad sub-workflow and failure-policy attrs with invalid_workflow and one detail per field', async () => {
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(sub('s', ''), wf.code('c', 'return 1;', { retry: { maxAttempts: 0 }, timeoutMs: 'soon', fallback: 'x' })), { id: parentProject });
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_workflow');
    expect(r.body.details.map((d: Json) => d.field)).toEqual(['content.0.attrs.block', 'content.1.attrs.retry', 'content.1.attrs.timeoutMs', 'content.1.attrs.fallback']);
  });
});

/** This area's folders of examples/workflows (the examples runner runs every folder; these are checked here too). */
const examplesDir = fileURLToPath(new URL('../../../examples/workflows/', import.meta.url));
const examples = ['subworkflow', 'fallback'];
const readJson = (...path: string[]) => JSON.parse(readFileSync(join(examplesDir, ...path), 'utf8')) as Json;

describe.each(testDatabases())('examples/workflows of sub-workflows and failure policies on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  beforeAll(async () => {
    t = await startTestHost(db, 'node');
    owner = await actor(t);
  });
  afterAll(() => t?.close());

  it.each(examples)('%s: the stream:false run completes with the globalCtx of expected.json', async (name) => {
    const project = await createProject(t, owner.token);
    // children/<child>/workflow.json: created and deployed first; {{children.<child>}} in workflow.json becomes its block id.
    let text = readFileSync(join(examplesDir, name, 'workflow.json'), 'utf8');
    const childrenDir = join(examplesDir, name, 'children');
    for (const child of existsSync(childrenDir) ? readdirSync(childrenDir) : []) {
      const bid = await deployed(t, owner.token, project.id, readJson(name, 'children', child, 'workflow.json'));
      text = text.split(`{{children.${child}}}`).join(bid);
    }
    const { documentId } = await workflowDocument(t, owner.token, JSON.parse(text), project);
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: readJson(name, 'inputs.json'), stream: false } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.status, JSON.stringify(r.body.error)).toBe('completed');
    const ctx = Object.fromEntries((r.body.globalCtx as Json[]).map((entry) => [entry.name, entry.value]));
    for (const [key, value] of Object.entries(readJson(name, 'expected.json'))) expect(ctx[key], key).toEqual(value);
  });
});

describe.each(testDatabases())('a sub-workflow whose parent attempt is lost on $name', (base) => {
  const db = sharedDatabase(base);
  afterAll(() => db.cleanup());

  it('the next attempt of the parent attaches to the same child instead of starting another', async () => {
    const first = await startTestHost(db, 'node', { adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())], config: { runs: { shutdownGraceMs: 0 } } as never });
    const owner = await actor(first);
    const project = await createProject(first, owner.token, { access: 'private' });
    const slow = await deployed(first, owner.token, project.id, wf.doc(wf.input('x'), wf.llm('work', 'hang', 'do {{ x }}'), wf.output('out', '{{ work }}')));
    const { documentId } = await workflowDocument(first, owner.token, wf.doc(sub('s', slow, { x: 'it' }), wf.output('out', 'parent got {{ s }}')), project);
    const started = await readNdjson(`${first.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' }, stopAfter: 2 });
    const runId = started.events[0]!.data.runId as string;
    const list = (h: TestHost) => h.request('GET', `/documents/${documentId}/runs/${runId}/children`, { token: owner.token });
    const [childRun] = (await eventually(() => list(first), (r) => r.body.items?.[0]?.status === 'running', 'the child running')).body.items as Json[];
    await first.close();

    const second = await startTestHost(db, 'node', {
      adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway({ hang: 'echo' }))],
      config: { runs: { staleAfterSeconds: 3, reaperIntervalMs: 200 } } as never,
    });
    try {
      const parent = await eventually(() => second.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed', 'the parent completed');
      expect(parent.body).toMatchObject({ output: 'parent got Echo: do it ', attempts: 2 });
      const after = (await list(second)).body.items as Json[];
      expect(after.map((c) => c.id)).toEqual([childRun!.id]);
      expect(after[0]).toMatchObject({ status: 'completed', output: 'Echo: do it ', attempts: 2 });
    } finally {
      await second.close();
    }
  });
});

describe.each(testDatabases())('sub-workflows with one run slot on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  beforeAll(async () => {
    t = await startTestHost(db, 'node', { config: { runs: { concurrency: 1 } } as never });
    owner = await actor(t);
  });
  afterAll(() => t?.close());

  it('a 3-level chain completes while its parents hold the only slot, and queued parents wait their turn', async () => {
    // Before: a child was queued behind its waiting parent's slot and never started (the parent
    // timed out). A child now runs in the slot its parent holds (docs/runs.md, "Sub-workflows").
    const project = await createProject(t, owner.token);
    const { child } = await chain(t, owner.token, project.id);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('n', { type: 'number' }), sub('c', child, { n: '{{ n }}' }), wf.output('result', 'result={{ c }}')), project);
    const answers = await Promise.all([1, 2, 3].map((n) => t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { n }, stream: false, timeout: 60 } })));
    expect(answers.map((r) => r.body.output)).toEqual(['result=3', 'result=5', 'result=7']);
  });
});
