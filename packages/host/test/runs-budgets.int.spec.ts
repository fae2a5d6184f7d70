import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readSse } from './support/run-clients.js';

/*
 * Budgets (docs/runs.md, "Budgets") over HTTP on a real host, with the OpenAI adapter talking to
 * the local wire server. Pricing: one credit per token, and a call's hold is 30 credits (20 input
 * and 10 output tokens assumed); every scripted answer reports 10 + 10 tokens, so every call costs
 * 20 credits. A call is refused when spent + 30 would pass the budget.
 */
const pricing = { default: { input: 1000, output: 1000 }, reserveInputTokens: 20, reserveOutputTokens: 10 };
const answer = (text: string) => ({ text: [text], usage: { inputTokens: 10, outputTokens: 10 } });

describe.each(testDatabases())('budgets on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let wire: OpenAiWireServer;
  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-budget' }).start();
    host = await startTestHost(db, 'node', { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider({ retry: { maxRetries: 0 } })])], config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, ai: { pricing } } as never });
    // Every JSON answer is checked against /openapi.json.
    t = host;
  });
  afterAll(async () => {
    await host?.close();
    await wire?.close();
  });

  async function model(token: string): Promise<string> {
    const r = await t.request('POST', '/ai/models', { token, body: { name: `wire ${Date.now()}`, service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-budget' } } });
    if (r.status !== 201) throw new Error(`model create failed: ${r.status} ${r.text}`);
    return r.body.id;
  }

  /** Scripted answers, numbered, for the calls to come (the wire server's count starts again). */
  function script(n: number): void {
    wire.reset();
    wire.enqueue(...Array.from({ length: n }, (_, i) => answer(`answer ${i + 1}`)));
  }

  const runOf = (owner: Actor, documentId: string, runId: string) => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });

  it('a budget wait is told to webhook subscribers: run.waiting with its reason, and budget.reached', async () => {
    // Before: budget.reached was documented and subscribable, but nothing ever sent it.
    const received: Array<{ type: string; data: Record<string, unknown> }> = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push(JSON.parse(body));
        response.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const owner = await actor(t);
      const modelId = await model(owner.token);
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const sub = await host.request('POST', '/webhooks/subscriptions', { token: owner.token, body: { url, events: ['run.waiting', 'budget.reached'] } });
      expect(sub.status).toBe(201);
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('a', modelId, 'first'), wf.llm('b', modelId, 'second')));
      script(2);
      // a: 0 + 30 <= 40; b: 20 + 30 > 40.
      const paused = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { budget: { credits: 40 } } });
      const runId = paused.events.at(-1)!.data.runId as string;
      await eventually(async () => received, (list) => list.length >= 2, 'two webhook deliveries');
      expect(received.map((r) => r.type).sort()).toEqual(['budget.reached', 'run.waiting']);
      expect(received.find((r) => r.type === 'budget.reached')!.data).toMatchObject({ key: `run:${runId}`, budget: 40, spent: 20, required: 30, scope: 'run', runId, documentId, period: null });
      expect(received.find((r) => r.type === 'run.waiting')!.data).toMatchObject({ runId, status: 'waiting', blockId: 'llm-b', reason: 'budget', budget: { scope: 'run', credits: 40, spent: 20 } });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('pauses before the call that would pass the run budget, and raising it resumes without running anything again', async () => {
    const owner = await actor(t);
    const modelId = await model(owner.token);
    const content = wf.doc(wf.llm('a', modelId, 'first'), wf.llm('b', modelId, 'second'), wf.code('mid', 'return blocks.a + " / " + blocks.b;'), wf.llm('c', modelId, 'third'), wf.output('out', '{{ mid }} / {{ c }}'));
    const { documentId } = await workflowDocument(t, owner.token, content);
    script(3);
    // a: 0 + 30 <= 60; b: 20 + 30 <= 60; c: 40 + 30 > 60.
    const paused = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { budget: { credits: 60 } } });
    const waiting = paused.events.at(-1)!;
    expect(waiting.type).toBe('run_waiting');
    expect(waiting.data).toMatchObject({ blockId: 'llm-c', reason: 'budget', budget: { scope: 'run', credits: 60, spent: 40, required: 30 } });
    expect(typeof waiting.data.question).toBe('string');
    expect(wire.chatRequests).toHaveLength(2);
    const runId = waiting.data.runId as string;
    const record = await runOf(owner, documentId, runId);
    expect(record.body.status).toBe('waiting');
    expect(record.body.waiting).toMatchObject({ blockId: 'llm-c', reason: 'budget', budget: { scope: 'run', spent: 40 } });
    expect(record.body.budget).toEqual({ credits: 60 });
    expect(record.body.sessions.find((s: { blockId: string }) => s.blockId === 'llm-c').status).toBe('waiting');

    // The ask answer endpoint does not answer a budget wait.
    const answered = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'go' } });
    expect(answered.status).toBe(409);
    expect(answered.body.error).toBe('run_waiting_for_budget');

    // Lowering does not resume.
    const lowered = await t.request('POST', `/documents/${documentId}/runs/${runId}/budget`, { token: owner.token, body: { credits: 50 } });
    expect(lowered.status).toBe(200);
    expect(lowered.body).toMatchObject({ runId, status: 'waiting', budget: { credits: 50 }, resumed: [] });

    const raised = await t.request('POST', `/documents/${documentId}/runs/${runId}/budget`, { token: owner.token, body: { credits: 100 } });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ runId, budget: { credits: 100 }, resumed: [runId] });
    const done = await eventually(() => runOf(owner, documentId, runId), (r) => r.body.status === 'completed' || r.body.status === 'failed', 'the run to end');
    expect(done.body.status).toBe('completed');
    expect(done.body.waiting).toBeNull();
    // One more model request: a and b were not called again, their outputs are kept.
    expect(wire.chatRequests).toHaveLength(3);
    expect(done.body.output).toBe('answer 1 / answer 2 / answer 3');
    const events = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token });
    const started = events.events.filter((e) => e.type === 'block_start').map((e) => e.data.blockId);
    expect(started).toEqual(['llm-a', 'llm-b', 'code-mid', 'llm-c', 'llm-c', 'out-out']);
  });

  it("a deployment's budget pauses two of its runs, and raising it resumes both", async () => {
    const owner = await actor(t);
    const modelId = await model(owner.token);
    const project = await createProject(t, owner.token);
    const content = wf.doc(wf.input('topic'), wf.llm('reply', modelId, 'On {{ topic }}'), wf.output('out', '{{ reply }}'));
    const created = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: `Budgeted ${Date.now()}`, type: 'workflow', content } });
    expect(created.status, created.text).toBe(201);
    const bid = created.body.id as string;
    const deployed = await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private', budget: { credits: 30 } } });
    expect(deployed.status, deployed.text).toBe(201);
    expect(deployed.body.block.budget).toEqual({ credits: 30 });
    script(3);
    // The first run: 0 + 30 <= 30, it completes (20 spent). The next two: 20 + 30 > 30, both wait.
    const first = await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { topic: 'tea' } } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.status).toBe('completed');
    const waiting = [];
    for (const topic of ['coffee', 'cocoa']) {
      const r = await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { topic } } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.status).toBe('waiting');
      expect(r.body.waiting).toMatchObject({ blockId: 'llm-reply', reason: 'budget', budget: { scope: 'deployment', credits: 30, spent: 20, required: 30 } });
      waiting.push(r.body.runId as string);
    }
    expect(wire.chatRequests).toHaveLength(1);

    // Lowering resumes nothing; raising resumes both.
    const lowered = await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { budget: { credits: 25 } } });
    expect(lowered.status, lowered.text).toBe(200);
    expect((await runOf(owner, bid, waiting[0]!)).body.status).toBe('waiting');
    const raised = await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { budget: { credits: 1000 } } });
    expect(raised.status, raised.text).toBe(200);
    expect(raised.body.block.budget).toEqual({ credits: 1000 });
    for (const runId of waiting) {
      const done = await eventually(() => runOf(owner, bid, runId), (r) => r.body.status === 'completed' || r.body.status === 'failed', `run ${runId}`);
      expect(done.body.status).toBe('completed');
    }
    expect(wire.chatRequests).toHaveLength(3);
  });

  it('a loop whose third iteration would pass the budget resumes with the remaining iterations only', async () => {
    const owner = await actor(t);
    const modelId = await model(owner.token);
    const loop = { type: 'loopBlock', attrs: { id: 'each', name: 'each', items: '[1, 2, 3, 4]', concurrency: 1 }, content: [wf.llm('say', modelId, 'Item {{ item }}')] };
    const content = wf.doc(loop, wf.output('out', '{{ each }}'));
    const { documentId } = await workflowDocument(t, owner.token, content);
    script(4);
    const paused = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { budget: { credits: 60 } } });
    const waiting = paused.events.at(-1)!;
    expect(waiting.data).toMatchObject({ reason: 'budget', blockId: 'llm-say', path: 'each[2]/llm-say' });
    expect(wire.chatRequests).toHaveLength(2);
    const runId = waiting.data.runId as string;
    const raised = await t.request('POST', `/documents/${documentId}/runs/${runId}/budget`, { token: owner.token, body: { credits: null } });
    expect(raised.body).toMatchObject({ budget: null, resumed: [runId] });
    const done = await eventually(() => runOf(owner, documentId, runId), (r) => r.body.status === 'completed' || r.body.status === 'failed', 'the loop run');
    expect(done.body.status).toBe('completed');
    // Iterations 0 and 1 were not asked again: 2 + 2 requests in all, in order.
    expect(wire.chatRequests).toHaveLength(4);
    expect(wire.chatRequests.map((r) => r.body.messages.at(-1).content)).toEqual(['Item 1', 'Item 2', 'Item 3', 'Item 4']);
    expect(done.body.globalCtx.find((e: { name: string }) => e.name === 'each').value).toEqual(['answer 1', 'answer 2', 'answer 3', 'answer 4']);
  });

  it("a sub-workflow's calls count against its parent's budget: both wait, and raising the parent's resumes both", async () => {
    const owner = await actor(t);
    const modelId = await model(owner.token);
    const project = await createProject(t, owner.token);
    const childContent = wf.doc(wf.llm('one', modelId, 'child one'), wf.llm('two', modelId, 'child two'), wf.output('out', '{{ one }} & {{ two }}'));
    const created = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: `Child ${Date.now()}`, type: 'workflow', content: childContent } });
    expect(created.status, created.text).toBe(201);
    const child = created.body.id as string;
    expect((await t.request('POST', `/block/${child}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
    const subworkflow = { type: 'subworkflowBlock', attrs: { id: 'sub-child', name: 'viaChild', block: child, inputs: {} } };
    const content = wf.doc(wf.llm('first', modelId, 'parent first'), subworkflow, wf.output('out', '{{ first }} | {{ viaChild }}'));
    const { documentId } = await workflowDocument(t, owner.token, content, project);
    script(3);
    // parent first: 0 + 30 <= 60 (20 spent); child one: 20 + 30 <= 60 (40); child two: 40 + 30 > 60.
    const paused = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, budget: { credits: 60 } } });
    expect(paused.body.status).toBe('waiting');
    expect(paused.body.waiting).toMatchObject({ blockId: 'sub-child', reason: 'budget', budget: { scope: 'run', credits: 60, spent: 40, required: 30 } });
    expect(wire.chatRequests).toHaveLength(2);
    const runId = paused.body.runId as string;
    const children = await t.request('GET', `/documents/${documentId}/runs/${runId}/children`, { token: owner.token });
    expect(children.body.items).toHaveLength(1);
    const childRun = children.body.items[0];
    expect(childRun).toMatchObject({ status: 'waiting', budget: null, budgetRootRunId: runId, waiting: { blockId: 'llm-two', reason: 'budget' } });
    const inherited = await t.request('POST', `/documents/${child}/runs/${childRun.id}/budget`, { token: owner.token, body: { credits: 500 } });
    expect(inherited.status).toBe(409);
    expect(inherited.body.error).toBe('run_budget_inherited');

    const raised = await t.request('POST', `/documents/${documentId}/runs/${runId}/budget`, { token: owner.token, body: { credits: 200 } });
    expect(raised.status, raised.text).toBe(200);
    expect(raised.body.resumed).toEqual([childRun.id, runId]);
    const done = await eventually(() => runOf(owner, documentId, runId), (r) => r.body.status === 'completed' || r.body.status === 'failed', 'the parent run');
    expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
    expect(done.body.output).toBe('answer 1 | answer 2 & answer 3');
    // Nothing ran twice: one more model request, and still one child.
    expect(wire.chatRequests).toHaveLength(3);
    expect((await t.request('GET', `/documents/${documentId}/runs/${runId}/children`, { token: owner.token })).body.items).toHaveLength(1);
  });

  it('checks a structured-output repair like any call: the block pauses before it and starts over on resume', async () => {
    const owner = await actor(t);
    const modelId = await model(owner.token);
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('num', modelId, 'A number, please', { outputSchema: schema, maxRepairs: 2 })));
    wire.reset();
    wire.enqueue(answer('not json'), answer('{"n": 7}'), answer('still not json'), answer('{"n": 8}'));
    // The first try: 0 + 30 <= 40 (20 spent); its repair: 20 + 30 > 40.
    const paused = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, budget: { credits: 40 } } });
    expect(paused.body.status).toBe('waiting');
    expect(paused.body.waiting).toMatchObject({ blockId: 'llm-num', reason: 'budget', budget: { spent: 20, required: 30 } });
    expect(wire.chatRequests).toHaveLength(1);
    const runId = paused.body.runId as string;
    await t.request('POST', `/documents/${documentId}/runs/${runId}/budget`, { token: owner.token, body: { credits: 200 } });
    const done = await eventually(() => runOf(owner, documentId, runId), (r) => r.body.status === 'completed' || r.body.status === 'failed', 'the structured run');
    expect(done.body.status).toBe('completed');
    // The block starts over: its first try is asked again (the answers queued: {"n": 7} was the second).
    expect(done.body.output).toEqual({ n: 7 });
    expect(wire.chatRequests).toHaveLength(2);
  });

  it('refuses bad budgets with documented errors', async () => {
    const owner = await actor(t);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.ask('q', 'Why, {{ name }}?')));
    for (const budget of [{ credits: -1 }, { credits: 1.5 }, { credits: 'ten' }, {}, 5]) {
      const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, inputs: { name: 'x' }, budget } });
      expect(r.status, JSON.stringify(budget)).toBe(400);
      expect(r.body.error).toBe('validation_failed');
    }

    const asked = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, inputs: { name: 'x' } } });
    expect(asked.body.status).toBe('waiting');
    const runId = asked.body.runId as string;
    const url = `/documents/${documentId}/runs/${runId}/budget`;
    for (const body of [{}, { credits: -1 }, { credits: 2.5 }, { credits: '10' }, { credits: 3_000_000_000 }]) {
      const r = await t.request('POST', url, { token: owner.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('validation_failed');
    }
    // A run waiting for an answer: its budget is not what it waits for.
    const forInput = await t.request('POST', url, { token: owner.token, body: { credits: 10 } });
    expect(forInput.status).toBe(409);
    expect(forInput.body.error).toBe('run_waiting_for_input');
    await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'because' } });
    await eventually(() => runOf(owner, documentId, runId), (r) => r.body.status === 'completed', 'the asked run');
    const finished = await t.request('POST', url, { token: owner.token, body: { credits: 10 } });
    expect(finished.status).toBe(409);
    expect(finished.body.error).toBe('run_finished');
    const stranger = await actor(t);
    const hidden = await t.request('POST', url, { token: stranger.token, body: { credits: 10 } });
    expect(hidden.status).toBe(404);

    const project = await createProject(t, owner.token);
    const block = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: `Bad budget ${Date.now()}`, type: 'workflow', content: wf.doc(wf.output('o', 'x')) } });
    const deploy = await t.request('POST', `/block/${block.body.id}/deploy`, { token: owner.token, body: { access: 'private', budget: { credits: 1.5 } } });
    expect(deploy.status).toBe(422);
    expect(deploy.body.error).toBe('validation_failed');
  });
});
