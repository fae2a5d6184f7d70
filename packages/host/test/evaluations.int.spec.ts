import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { aiProvidersServiceIdentifier, provide, runQueueServiceIdentifier } from '@trellis/core';
import { BullMqRunQueue } from '@trellis/queue-bullmq';
import { OpenAiProvider } from '@trellis/ai-openai';
import { describeWithRedis, OpenAiWireServer, openAiEchoReply, startTestHost, testDatabases, type TestHost, type WireRequest } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Evaluations over a real host (both databases): datasets through the API and from past runs, a
 * 20-case evaluation of two deployed versions compared case by case, a model-graded judge and the
 * concurrency bound against a local server speaking OpenAI's wire format, cancel, and access.
 */

type Json = Record<string, any>;

const GRADER = 'You are a strict grader';
const text = (m: any): string => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((p: any) => p.text ?? '').join('') : '');

/** Parity of n; v2 answers `fizz` for multiples of 3 (six of 1..20 change). */
const parity = (label: string, fizz: boolean) =>
  wf.doc(
    wf.input('n', { type: 'number', required: true }),
    wf.code('calc', fizz ? "return inputs.n % 3 === 0 ? 'fizz' : inputs.n % 2 === 0 ? 'even' : 'odd';" : "return inputs.n % 2 === 0 ? 'even' : 'odd';", { label }),
    wf.output('out', '{{ calc }}'),
  );

let counter = 0;

describe.each(testDatabases())('evaluations on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let wire: OpenAiWireServer;
  let owner: Actor;
  let outsider: Actor;
  let projectId: string;
  let modelId: string;
  /** Model streams going on at once, at most, since the last reset (LLM blocks and judges alike). */
  let peak = 0;

  beforeAll(async () => {
    wire = await new OpenAiWireServer({
      apiKey: 'sk-evals',
      fallback: (request: WireRequest) => {
        const messages: any[] = request.body?.messages ?? [];
        peak = Math.max(peak, wire.activeStreams + 1);
        if (messages.some((m) => m.role === 'system' && text(m).startsWith(GRADER))) {
          const output = text(messages.at(-1)).split('OUTPUT:\n')[1] ?? '';
          const good = output.includes('good');
          return { text: [JSON.stringify({ score: good ? 0.9 : 0.1, reason: good ? 'on topic' : 'off topic' })] };
        }
        const last = text(messages.at(-1));
        return { ...openAiEchoReply(request), delayMs: last.startsWith('slow') ? 400 : 30 };
      },
    }).start();
    host = await startTestHost(db, 'node', {
      adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
      config: {
        network: { allowPrivateNetworks: ['127.0.0.1'] },
        evaluations: { maxConcurrency: 8 },
        // Well over a hundred runs: more than the default free plan's credits.
        billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 100_000, monthlyPrice: 0, yearlyPrice: 0 } } },
      },
    });
    t = host;
    owner = await actor(t);
    outsider = await actor(t);
    projectId = (await createProject(t, owner.token, { access: 'private' })).id;
    const model = await t.request('POST', '/ai/models', { token: owner.token, body: { name: `evals ${++counter}`, service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-evals' } } });
    expect(model.status, model.text).toBe(201);
    modelId = model.body.id;
  });
  afterAll(async () => {
    await host?.close();
    await wire?.close();
  });

  async function block(content: unknown): Promise<string> {
    const r = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Eval flow ${++counter}`, type: 'workflow', content } });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  }
  async function deploy(bid: string): Promise<void> {
    const r = await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } });
    expect(r.status, r.text).toBe(201);
  }
  async function dataset(bid: string, cases: Json[]): Promise<string> {
    const r = await t.request('POST', '/datasets', { token: owner.token, body: { name: `cases ${++counter}`, blockId: bid, cases } });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  }
  async function evaluate(body: Json): Promise<Json> {
    const r = await t.request('POST', '/evaluations', { token: owner.token, body });
    expect(r.status, r.text).toBe(202);
    return r.body;
  }
  async function finished(id: string): Promise<Json> {
    for (let i = 0; i < 1200; i++) {
      const r = await t.request('GET', `/evaluations/${id}`, { token: owner.token });
      expect(r.status).toBe(200);
      if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`evaluation ${id} did not finish`);
  }
  async function results(id: string): Promise<Json[]> {
    const all: Json[] = [];
    for (let page = 1; ; page++) {
      const r = await t.request('GET', `/evaluations/${id}/results?size=100&page=${page}`, { token: owner.token });
      expect(r.status).toBe(200);
      all.push(...r.body.items);
      if (r.body.items.length < 100) return all;
    }
  }

  it('a 20-case dataset evaluated on two deployed versions: per-case results, summaries, and the comparison names the cases that changed', async () => {
    const bid = await block(parity('v1', false));
    await deploy(bid);
    expect((await t.request('PUT', `/block/${bid}`, { token: owner.token, body: { content: parity('v2', true) } })).status).toBe(200);
    await deploy(bid);
    const cases = Array.from({ length: 20 }, (_, i) => ({ name: `n=${i + 1}`, inputs: { n: i + 1 }, expected: (i + 1) % 2 === 0 ? 'even' : 'odd' }));
    const datasetId = await dataset(bid, cases);
    const read = await t.request('GET', `/datasets/${datasetId}`, { token: owner.token });
    expect(read.body).toMatchObject({ id: datasetId, blockId: bid, caseCount: 20 });
    const page = await t.request('GET', `/datasets/${datasetId}/cases?size=5&page=2`, { token: owner.token });
    expect(page.body.total).toBe(20);
    expect(page.body.items.map((c: Json) => c.name)).toEqual(['n=6', 'n=7', 'n=8', 'n=9', 'n=10']);
    expect((await t.request('GET', `/datasets?blockId=${bid}`, { token: owner.token })).body.items.map((d: Json) => d.id)).toEqual([datasetId]);

    const evaluators = [{ type: 'exact' }, { type: 'regex', pattern: '^(even|odd|fizz)$' }];
    const v1 = await evaluate({ datasetId, blockId: bid, version: '1', evaluators, concurrency: 4 });
    expect(v1).toMatchObject({ datasetId, blockId: bid, version: '1', concurrency: 4, summary: { cases: 20 } });
    expect(['queued', 'running']).toContain(v1.status);
    const v2 = await evaluate({ datasetId, blockId: bid, version: '2', evaluators });
    const done1 = await finished(v1.id);
    const done2 = await finished(v2.id);
    expect(done1).toMatchObject({ status: 'completed', summary: { cases: 20, passed: 20, failed: 0, errored: 0, meanScore: 1 } });
    expect(done2).toMatchObject({ status: 'completed', concurrency: 4, summary: { cases: 20, passed: 14, failed: 6, errored: 0, meanScore: 0.85 } });
    expect(done1.summary.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(done1.summary.latencyMs.p95).toBeGreaterThanOrEqual(done1.summary.latencyMs.p50);
    expect(Date.parse(done1.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done1.createdAt));

    const rows = await results(v2.id);
    expect(rows.map((r) => r.caseName)).toEqual(cases.map((c) => c.name));
    const six = rows.find((r) => r.caseName === 'n=6')!;
    expect(six).toMatchObject({ status: 'completed', output: 'fizz', passed: false, score: 0.5 });
    expect(six.scores).toEqual([
      { evaluator: 'exact', score: 0, passed: false, detail: 'expected even, got fizz' },
      { evaluator: 'regex', score: 1, passed: true, detail: null },
    ]);
    // Each case is a real run of the pinned version with the case's inputs, billed as usual.
    const run = await t.request('GET', `/documents/${bid}/runs/${six.runId}`, { token: owner.token });
    expect(run.body).toMatchObject({ status: 'completed', source: 'evaluation', version: '2', inputs: { n: 6 }, output: 'fizz' });
    expect(six.credits).toBe(run.body.usedCredits);
    expect(done2.summary.credits).toBe(rows.reduce((sum, r) => sum + r.credits, 0));
    const paged = await t.request('GET', `/evaluations/${v2.id}/results?size=5&page=4`, { token: owner.token });
    expect(paged.body).toMatchObject({ total: 20, page: 4, size: 5 });
    expect(paged.body.items.map((r: Json) => r.caseName)).toEqual(['n=16', 'n=17', 'n=18', 'n=19', 'n=20']);

    const compared = await t.request('GET', `/evaluations/compare?base=${v1.id}&candidate=${v2.id}`, { token: owner.token });
    expect(compared.status, compared.text).toBe(200);
    expect(compared.body.summary).toEqual({ improved: 0, regressed: 6, unchanged: 14, changed: 0 });
    expect(compared.body.cases.filter((c: Json) => c.change === 'regressed').map((c: Json) => c.caseName)).toEqual(['n=3', 'n=6', 'n=9', 'n=12', 'n=15', 'n=18']);
    expect(compared.body.cases.find((c: Json) => c.caseName === 'n=9')).toMatchObject({ base: { passed: true, score: 1, output: 'odd' }, candidate: { passed: false, score: 0.5, output: 'fizz' } });
    expect(compared.body.base.id).toBe(v1.id);
    const reverse = await t.request('GET', `/evaluations/compare?base=${v2.id}&candidate=${v1.id}`, { token: owner.token });
    expect(reverse.body.summary).toEqual({ improved: 6, regressed: 0, unchanged: 14, changed: 0 });
    // A looser evaluator: the verdicts stay, the outputs differ.
    const loose = await evaluate({ datasetId, blockId: bid, version: '2', evaluators: [{ type: 'regex', pattern: '^[a-z]+$' }] });
    const looseV1 = await evaluate({ datasetId, blockId: bid, version: '1', evaluators: [{ type: 'regex', pattern: '^[a-z]+$' }] });
    await finished(loose.id);
    await finished(looseV1.id);
    const changed = await t.request('GET', `/evaluations/compare?base=${looseV1.id}&candidate=${loose.id}`, { token: owner.token });
    expect(changed.body.summary).toEqual({ improved: 0, regressed: 0, unchanged: 14, changed: 6 });

    const listed = await t.request('GET', `/evaluations?datasetId=${datasetId}`, { token: owner.token });
    expect(listed.body.total).toBe(4);
    expect(listed.body.items.map((e: Json) => e.id)).toContain(v1.id);
    expect((await t.request('GET', `/evaluations?blockId=${bid}&size=1`, { token: owner.token })).body).toMatchObject({ total: 4, size: 1 });
  });

  it('cases from earlier runs: their inputs, and their outputs as expectations', async () => {
    const bid = await block(parity('runs', false));
    await deploy(bid);
    const runIds: string[] = [];
    for (const n of [7, 8]) {
      const r = await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { n } } });
      expect(r.status, r.text).toBe(200);
      runIds.push(r.body.runId);
    }
    const datasetId = await dataset(bid, []);
    const added = await t.request('POST', `/datasets/${datasetId}/cases`, { token: owner.token, body: { fromRuns: runIds, expectOutput: true } });
    expect(added.status, added.text).toBe(201);
    expect(added.body.items.map((c: Json) => [c.inputs, c.expected, c.sourceRunId])).toEqual([
      [{ n: 7 }, 'odd', runIds[0]],
      [{ n: 8 }, 'even', runIds[1]],
    ]);
    const plain = await t.request('POST', `/datasets/${datasetId}/cases`, { token: owner.token, body: { fromRuns: [runIds[0]] } });
    expect(plain.body.items[0]).toMatchObject({ inputs: { n: 7 }, expected: null });
    expect((await t.request('GET', `/datasets/${datasetId}`, { token: owner.token })).body.caseCount).toBe(3);

    // A run of another block is refused; so are both or neither of cases and fromRuns.
    const other = await block(parity('other', false));
    const foreign = await t.request('POST', `/block/${other}/run`, { token: owner.token, body: { stream: false, inputs: { n: 1 } } });
    const refused = await t.request('POST', `/datasets/${datasetId}/cases`, { token: owner.token, body: { fromRuns: [foreign.body.runId] } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe('run_not_usable');
    const both = await t.request('POST', `/datasets/${datasetId}/cases`, { token: owner.token, body: { fromRuns: runIds, cases: [{ inputs: {} }] } });
    expect(both.status).toBe(422);
    expect((await t.request('POST', `/datasets/${datasetId}/cases`, { token: owner.token, body: {} })).status).toBe(422);

    const evaluation = await evaluate({ datasetId, blockId: bid, version: '1', evaluators: [{ type: 'exact' }] });
    const done = await finished(evaluation.id);
    // The case without an expectation fails `exact` (null is not the output).
    expect(done.summary).toMatchObject({ cases: 3, passed: 2, failed: 1 });
  });

  it('a model-graded judge scores each output with a reason; no more runs go on at once than the concurrency', async () => {
    const bid = await block(wf.doc(wf.input('q'), wf.llm('answer', modelId, '{{ q }}'), wf.output('out', '{{ answer }}')));
    await deploy(bid);
    const datasetId = await dataset(
      bid,
      Array.from({ length: 6 }, (_, i) => ({ name: `q${i}`, inputs: { q: i % 2 === 0 ? `good question ${i}` : `bad question ${i}` } })),
    );
    peak = 0;
    const before = wire.chatRequests.length;
    const rubric = 'The answer must stay on a good topic.';
    const evaluation = await evaluate({ datasetId, blockId: bid, version: '1', concurrency: 2, evaluators: [{ type: 'judge', modelId, rubric }, { type: 'contains', value: 'You said', weight: 0 }] });
    const done = await finished(evaluation.id);
    expect(done, JSON.stringify(await results(evaluation.id))).toMatchObject({ status: 'completed', concurrency: 2, summary: { cases: 6, passed: 3, failed: 3, errored: 0 } });
    expect(peak).toBeGreaterThanOrEqual(1);
    expect(peak).toBeLessThanOrEqual(2);
    const rows = await results(evaluation.id);
    expect(rows[0]!.scores[0]).toMatchObject({ evaluator: 'judge', score: 0.9, passed: true, detail: 'on topic' });
    expect(rows[1]!.scores[0]).toMatchObject({ evaluator: 'judge', score: 0.1, passed: false, detail: 'off topic' });
    expect(rows[1]!.scores[1]).toMatchObject({ evaluator: 'contains', passed: true });
    // The weight-0 evaluator counts for passing but not for the score.
    expect(rows[0]!.score).toBe(0.9);
    // Six runs and six judge calls reached the provider; the judge saw the rubric and the output.
    const sent = wire.chatRequests.slice(before);
    const judged = sent.filter((r) => r.body.messages.some((m: any) => m.role === 'system' && text(m).startsWith(GRADER)));
    expect(judged).toHaveLength(6);
    expect(sent).toHaveLength(12);
    expect(text(judged[0]!.body.messages.at(-1))).toContain(`RUBRIC:\n${rubric}`);
    // Judge calls are paid like the runs: each case's credits are its run's and its judge's.
    for (const row of rows) {
      const run = await t.request('GET', `/documents/${bid}/runs/${row.runId}`, { token: owner.token });
      expect(row.credits).toBe(run.body.usedCredits + (row.scores[0].credits ?? 0));
      expect(row.scores[0].credits).toBeGreaterThanOrEqual(1);
    }
  });

  it('cancel: the run going on is cancelled, no further case starts, and a second cancel is 409', async () => {
    const bid = await block(wf.doc(wf.input('q'), wf.llm('answer', modelId, '{{ q }}'), wf.output('out', '{{ answer }}')));
    await deploy(bid);
    const datasetId = await dataset(bid, Array.from({ length: 5 }, (_, i) => ({ inputs: { q: `slow ${i}` } })));
    const evaluation = await evaluate({ datasetId, blockId: bid, version: '1', concurrency: 1, evaluators: [{ type: 'contains', value: 'slow' }] });
    let going: Json | undefined;
    for (let i = 0; i < 1200 && !going; i++) {
      going = (await results(evaluation.id)).find((r) => r.status === 'running');
      if (!going) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(going, 'a case running').toBeDefined();
    const cancelled = await t.request('POST', `/evaluations/${evaluation.id}/cancel`, { token: owner.token });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.finishedAt).not.toBeNull();
    const again = await t.request('POST', `/evaluations/${evaluation.id}/cancel`, { token: owner.token });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('evaluation_finished');
    await host.kernel.container.get((await import('@trellis/core')).EvaluationRunner).idle();
    const rows = await results(evaluation.id);
    expect(rows.filter((r) => r.runId).map((r) => r.caseId)).toEqual([going!.caseId]);
    expect(rows.every((r) => r.status === 'cancelled' || r.status === 'completed')).toBe(true);
    expect(rows.filter((r) => r.status === 'cancelled').length).toBeGreaterThanOrEqual(4);
    const run = await t.request('GET', `/documents/${bid}/runs/${going!.runId}`, { token: owner.token });
    for (let i = 0; i < 400 && !['cancelled', 'completed'].includes(run.body.status); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      Object.assign(run, await t.request('GET', `/documents/${bid}/runs/${going!.runId}`, { token: owner.token }));
    }
    expect(run.body.status).toBe('cancelled');
    expect((await t.request('GET', `/evaluations/${evaluation.id}`, { token: owner.token })).body.status).toBe('cancelled');
  });

  it('access and bad input: outsiders get 404 everywhere; documented 4xx codes, never a 5xx', async () => {
    const bid = await block(parity('access', false));
    await deploy(bid);
    const datasetId = await dataset(bid, [{ inputs: { n: 2 }, expected: 'even' }]);
    const evaluation = await evaluate({ datasetId, blockId: bid, version: '1', evaluators: [{ type: 'exact' }] });
    await finished(evaluation.id);
    const as = (token: string) => ({ token });
    const notFound = async (method: string, path: string, code: string, body?: Json) => {
      const r = await t.request(method, path, { ...as(outsider.token), ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body.error).toBe(code);
    };
    await notFound('GET', `/datasets/${datasetId}`, 'dataset_not_found');
    await notFound('GET', `/datasets/${datasetId}/cases`, 'dataset_not_found');
    await notFound('POST', `/datasets/${datasetId}/cases`, 'dataset_not_found', { cases: [{ inputs: {} }] });
    await notFound('DELETE', `/datasets/${datasetId}`, 'dataset_not_found');
    await notFound('GET', `/evaluations/${evaluation.id}`, 'evaluation_not_found');
    await notFound('GET', `/evaluations/${evaluation.id}/results`, 'evaluation_not_found');
    await notFound('POST', `/evaluations/${evaluation.id}/cancel`, 'evaluation_not_found');
    await notFound('GET', `/evaluations/compare?base=${evaluation.id}&candidate=${evaluation.id}`, 'evaluation_not_found');
    await notFound('GET', `/datasets?blockId=${bid}`, 'block_not_found');
    await notFound('GET', `/evaluations?blockId=${bid}`, 'block_not_found');
    await notFound('GET', `/evaluations?datasetId=${datasetId}`, 'dataset_not_found');
    await notFound('POST', '/datasets', 'block_not_found', { name: 'x', blockId: bid });
    await notFound('POST', '/evaluations', 'block_not_found', { datasetId, blockId: bid, version: '1', evaluators: [{ type: 'exact' }] });
    expect((await t.request('GET', '/datasets', as(outsider.token))).body.total).toBe(0);
    expect((await t.request('GET', '/evaluations', as(outsider.token))).body.total).toBe(0);
    expect((await t.request('GET', `/evaluations/${evaluation.id}`)).status).toBe(401);

    const bad = async (body: Json, status: number, code: string) => {
      const r = await t.request('POST', '/evaluations', { token: owner.token, body });
      expect(r.status, r.text).toBe(status);
      expect(r.body.error).toBe(code);
    };
    const ok = { datasetId, blockId: bid, version: '1', evaluators: [{ type: 'exact' }] };
    await bad({ ...ok, evaluators: [{ type: 'regex', pattern: '[' }] }, 422, 'invalid_evaluator');
    await bad({ ...ok, evaluators: [{ type: 'judge', modelId, rubric: '' }] }, 422, 'invalid_evaluator');
    await bad({ ...ok, evaluators: [] }, 422, 'validation_failed');
    await bad({ ...ok, concurrency: 9 }, 422, 'concurrency_too_high');
    await bad({ ...ok, version: '9' }, 404, 'block_version_not_found');
    await bad({ ...ok, version: 'latest' }, 422, 'validation_failed');
    const otherBlock = await block(parity('mismatch', false));
    await deploy(otherBlock);
    await bad({ ...ok, blockId: otherBlock }, 422, 'dataset_block_mismatch');
    const empty = await dataset(bid, []);
    await bad({ ...ok, datasetId: empty }, 422, 'dataset_empty');
    const undeployed = await block(parity('draft', false));
    const draftSet = await dataset(undeployed, [{ inputs: { n: 1 } }]);
    await bad({ datasetId: draftSet, blockId: undeployed, version: '1', evaluators: [{ type: 'exact' }] }, 404, 'deployment_not_found');
    const otherSet = await dataset(bid, [{ inputs: { n: 3 } }]);
    const otherEval = await evaluate({ ...ok, datasetId: otherSet });
    const mixed = await t.request('GET', `/evaluations/compare?base=${evaluation.id}&candidate=${otherEval.id}`, { token: owner.token });
    expect(mixed.status).toBe(422);
    expect(mixed.body.error).toBe('evaluations_not_comparable');
    expect((await t.request('GET', '/evaluations/compare?base=nope', { token: owner.token })).status).toBe(422);
    const tooBig = await t.request('POST', '/datasets', { token: owner.token, body: { name: 'x', blockId: bid, cases: [{ inputs: 'no' }] } });
    expect(tooBig.status).toBe(422);

    // Deleting the dataset deletes its evaluations.
    await finished(otherEval.id);
    expect((await t.request('DELETE', `/datasets/${otherSet}`, { token: owner.token })).status).toBe(204);
    expect((await t.request('GET', `/evaluations/${otherEval.id}`, { token: owner.token })).status).toBe(404);
  });
});

describeWithRedis('evaluations on the BullMQ run queue', (redisUrl) => {
  describe.each(testDatabases())('on $name', (db) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, 'node', { adapters: [provide(runQueueServiceIdentifier, new BullMqRunQueue({ url: redisUrl, prefix: `evals-${randomUUID()}`, concurrency: 4 }))] });
    });
    afterAll(() => t?.close());

    it('runs every case through BullMQ workers and scores them', async () => {
      const owner = await actor(t);
      const projectId = (await createProject(t, owner.token, { access: 'private' })).id;
      const bid = (await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Bull eval ${randomUUID()}`, type: 'workflow', content: parity('bull', true) } })).body.id;
      expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
      const ds = await t.request('POST', '/datasets', { token: owner.token, body: { name: 'bull', blockId: bid, cases: [1, 2, 3, 4, 5, 6].map((n) => ({ inputs: { n }, expected: n % 2 === 0 ? 'even' : 'odd' })) } });
      const created = await t.request('POST', '/evaluations', { token: owner.token, body: { datasetId: ds.body.id, blockId: bid, version: '1', concurrency: 2, evaluators: [{ type: 'exact' }] } });
      expect(created.status, created.text).toBe(202);
      let done: Json = created.body;
      for (let i = 0; i < 1200 && !['completed', 'failed', 'cancelled'].includes(done.status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        done = (await t.request('GET', `/evaluations/${created.body.id}`, { token: owner.token })).body;
      }
      // 3 and 6 answer fizz.
      expect(done).toMatchObject({ status: 'completed', summary: { cases: 6, passed: 4, failed: 2, errored: 0 } });
    });
  });
});
