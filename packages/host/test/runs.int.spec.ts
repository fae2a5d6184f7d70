import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide, RunService, TrellisError } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse, ScriptedGateway, type ReadEvent } from './support/run-clients.js';

const types = (events: ReadEvent[]) => events.map((e) => e.type);
const withoutChunks = (events: ReadEvent[]) => types(events).filter((t) => t !== 'block_chunk');

describe.each(testDatabases())('document runs on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let gateway: ScriptedGateway;
    let owner: Actor;
    beforeAll(async () => {
      gateway = new ScriptedGateway();
      t = await startTestHost(db, transport, {
        adapters: [provide(aiGatewayServiceIdentifier, gateway)],
        config: { runs: { maxTimeoutSeconds: 30 } } as never,
      });
      owner = await actor(t);
    });
    afterAll(() => t?.close());

    const runUrl = (documentId: string) => `${t.url}/documents/${documentId}/run`;

    it('streams every event of input → LLM → output over SSE to the eventsource client, ids 1..n', async () => {
      const content = wf.doc(wf.paragraph('intro', 'Say hello'), wf.input('topic', { required: true, description: 'What to echo' }), wf.llm('summary', 'echo', '{{ intro }} about {{ topic }}'), wf.output('result', '{{ summary }}'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const { events, status, contentType } = await readSse(runUrl(documentId), { token: owner.token, body: { inputs: { topic: 'gardens' } } });
      expect(status).toBe(200);
      expect(contentType).toMatch(/^text\/event-stream/);
      expectDense(events.map((e) => e.seq));
      expect(withoutChunks(events)).toEqual([
        'run_start',
        'block_start', 'block_complete', 'block_end',
        'block_start', 'block_complete', 'block_end',
        'block_start', 'block_complete', 'block_end',
        'run_complete',
      ]);
      const runId = events[0]!.data.runId;
      expect(events[0]!.data).toEqual({ runId, documentId });
      expect(events[1]!.data).toEqual({ blockId: 'in-topic', blockType: 'inputBlock', blockName: 'topic' });
      const chunks = events.filter((e) => e.type === 'block_chunk');
      expect(chunks.map((c) => c.data.delta).join('')).toBe('Echo: Say hello about gardens ');
      expect(chunks.every((c) => c.data.blockId === 'llm-summary')).toBe(true);
      const complete = events.at(-1)!.data;
      expect(complete).toMatchObject({ runId, completedBlocks: 3, timedOut: false });
      expect(complete.duration).toBeGreaterThanOrEqual(0);
      expect(complete.sessions).toEqual([
        { blockId: 'in-topic', blockType: 'inputBlock', blockName: 'topic', status: 'completed', output: 'gardens' },
        { blockId: 'llm-summary', blockType: 'llmBlock', blockName: 'summary', status: 'completed', output: 'Echo: Say hello about gardens ' },
        { blockId: 'out-result', blockType: 'outputBlock', blockName: 'result', status: 'completed', output: 'Echo: Say hello about gardens ' },
      ]);
      expect(complete.globalCtx.map((c: { name: string }) => c.name)).toEqual(['intro', 'topic', 'summary', 'result']);

      // The run record: status, inputs, sessions, output, usage per model, credits.
      const record = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
      expect(record.body).toMatchObject({
        id: runId,
        documentId,
        source: 'document',
        status: 'completed',
        inputs: { topic: 'gardens' },
        output: 'Echo: Say hello about gardens ',
        error: null,
        timedOut: false,
        usage: { models: { echo: { inputTokens: 4, outputTokens: 5, calls: 1 } }, sandboxMs: 0 },
        reservedCredits: 6,
        usedCredits: 2,
      });
      const list = await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token });
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 1, page: 1, items: [{ id: runId, status: 'completed' }] });
    });

    it('streams NDJSON with seq and type on every line; LLM tool calls and a tool block emit tool_start/tool_result', async () => {
      const content = wf.doc(
        wf.input('question'),
        wf.llm('answer', 'tooler', 'find {{ question }}', { tools: ['weather'] }),
        wf.tool('direct', 'weather', 'weather_lookup', { q: '{{ question }}', n: 3 }),
        wf.output('out', '{{ direct }}'),
      );
      const { documentId } = await workflowDocument(t, owner.token, content);
      const { events, status, contentType } = await readNdjson(runUrl(documentId), { token: owner.token, body: { inputs: { question: 'rain' }, format: 'ndjson' } });
      expect(status).toBe(200);
      expect(contentType).toBe('application/x-ndjson');
      expectDense(events.map((e) => e.seq));
      const tools = events.filter((e) => e.type.startsWith('tool_'));
      expect(tools).toEqual([
        { seq: expect.any(Number), type: 'tool_start', data: { blockId: 'llm-answer', toolCallId: 'call-1', toolName: 'weather_lookup' } },
        // Trellis addition: the call's idempotency key (docs/runs.md, "Exactly-once tool calls").
        { seq: expect.any(Number), type: 'tool_result', data: { blockId: 'llm-answer', toolCallId: 'call-1', result: { tool: 'weather_lookup', args: { q: 'find rain' } }, idempotencyKey: expect.stringMatching(/^[0-9a-f-]{36}$/) } },
        { seq: expect.any(Number), type: 'tool_start', data: { blockId: 'tool-direct', toolCallId: 'tool-direct:weather_lookup', toolName: 'weather_lookup' } },
        { seq: expect.any(Number), type: 'tool_result', data: { blockId: 'tool-direct', toolCallId: 'tool-direct:weather_lookup', result: { tool: 'weather_lookup', args: { q: 'rain', n: 3 } }, idempotencyKey: expect.stringMatching(/^[0-9a-f-]{36}$/) } },
      ]);
      const complete = events.at(-1)!;
      expect(complete.type).toBe('run_complete');
      expect(complete.data.sessions[1].output).toBe('done: {"tool":"weather_lookup","args":{"q":"find rain"}}');
      // The model saw the tool's definition and, in its second turn, the tool's result.
      const second = gateway.requests.filter((r) => r.tools?.[0]?.name === 'weather_lookup').at(-1)!;
      expect(second.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'call-1', toolName: 'weather_lookup' });
    });

    it('answers stream: false with {runId, documentId, globalCtx, sessions, duration, timedOut}', async () => {
      const content = wf.doc(wf.input('n', { type: 'number', default: 4 }), wf.output('twice', '{{ n }}'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ documentId, status: 'completed', timedOut: false, output: 4 });
      expect(r.body.globalCtx).toEqual([
        { name: 'n', blockId: 'in-n', blockType: 'inputBlock', value: 4 },
        { name: 'twice', blockId: 'out-twice', blockType: 'outputBlock', value: 4 },
      ]);
      expect(r.body.sessions.map((s: { status: string }) => s.status)).toEqual(['completed', 'completed']);
      expect(typeof r.body.duration).toBe('number');
      expect(r.body.runId).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('replays a finished run\'s whole log, and exactly what a dropped client missed (Last-Event-ID and ?after=)', async () => {
      const content = wf.doc(wf.llm('ticks', 'slow', 'count'), wf.output('out', '{{ ticks }}'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      // Drop the NDJSON stream after 6 events; the run goes on without the client.
      const first = await readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson' }, stopAfter: 6 });
      expect(first.events).toHaveLength(6);
      const runId = first.events[0]!.data.runId;
      const lastSeen = first.events.at(-1)!.seq;
      // Reconnect with Last-Event-ID over SSE: the rest, each exactly once, then the live tail.
      const rest = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: lastSeen });
      expect(rest.status).toBe(200);
      const seqs = [...first.events, ...rest.events].map((e) => e.seq);
      expectDense(seqs);
      expect(rest.events.at(-1)!.type).toBe('run_complete');
      const text = [...first.events, ...rest.events].filter((e) => e.type === 'block_chunk').map((e) => e.data.delta).join('');
      expect(text).toBe(Array.from({ length: 30 }, (_, i) => `tick ${i} `).join(''));
      // The finished run replays its whole log, the same events.
      const replay = await readNdjson(`${t.url}/documents/${documentId}/runs/${runId}/events?format=ndjson`, { method: 'GET', token: owner.token });
      expect(replay.events).toEqual([...first.events, ...rest.events]);
      const after = await readNdjson(`${t.url}/documents/${documentId}/runs/${runId}/events?format=ndjson&after=${seqs.length - 2}`, { method: 'GET', token: owner.token });
      expect(after.events.map((e) => e.seq)).toEqual([seqs.length - 1, seqs.length]);
    });

    it('pauses at an ask block; resume only enqueues and the continuation streams on the run\'s events', async () => {
      const content = wf.doc(wf.input('name'), wf.ask('colour', 'Which colour for {{ name }}?'), wf.output('out', '{{ name }} likes {{ colour }}'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const paused = await readSse(runUrl(documentId), { token: owner.token, body: { inputs: { name: 'Ada' } } });
      const waiting = paused.events.at(-1)!;
      expect(waiting.type).toBe('run_waiting');
      expect(waiting.data).toMatchObject({ blockId: 'ask-colour', question: 'Which colour for Ada?' });
      const runId = waiting.data.runId;
      const state = await t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });
      expect(state.body).toMatchObject({ status: 'waiting', waiting: { blockId: 'ask-colour', question: 'Which colour for Ada?' } });
      const resumed = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'green' } });
      expect(resumed.status).toBe(202);
      expect(resumed.body).toEqual({ success: true, runId, status: 'queued' });
      const again = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'blue' } });
      expect([409, 202]).toContain(again.status);
      const rest = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: waiting.seq });
      expectDense([...paused.events, ...rest.events].map((e) => e.seq));
      expect(withoutChunks(rest.events)).toEqual(['block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete']);
      expect(rest.events[0]!.data).toEqual({ blockId: 'ask-colour', output: 'green' });
      const final = await t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });
      expect(final.body).toMatchObject({ status: 'completed', output: 'Ada likes green', waiting: null });
      const late = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'red' } });
      expect(late.status).toBe(409);
      expect(late.body.error).toBe('run_not_waiting');
    });

    it('stops every started block at the timeout: block_error, run_error with a message, run_complete timedOut', async () => {
      const content = wf.doc(wf.llm('stuck', 'hang', 'wait'), wf.output('out', 'never'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const abortsBefore = gateway.aborts;
      const { events } = await readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson', timeout: 1 } });
      expect(withoutChunks(events)).toEqual(['run_start', 'block_start', 'block_error', 'block_end', 'run_error', 'run_complete']);
      expect(events[2]!.data).toMatchObject({ blockId: 'llm-stuck', code: 'run_timeout' });
      expect(events[4]!.data).toMatchObject({ error: 'run_timeout', message: expect.stringMatching(/timeout/) });
      expect(events[5]!.data).toMatchObject({ timedOut: true, completedBlocks: 0 });
      expect(gateway.aborts).toBe(abortsBefore + 1);
      const record = await t.request('GET', `/documents/${documentId}/runs/${events[0]!.data.runId}`, { token: owner.token });
      expect(record.body).toMatchObject({ status: 'timed_out', timedOut: true, usedCredits: 0 });
    });

    it('cancels a running run from another request; the stream ends with run_error run_cancelled', async () => {
      const content = wf.doc(wf.llm('ticks', 'slow', 'count'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const reading = readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson' } });
      const runs = await eventually(() => t.request('GET', `/documents/${documentId}/runs`, { token: owner.token }), (r) => r.body.items?.[0]?.status === 'running');
      const runId = runs.body.items[0].id;
      const cancelled = await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
      expect(cancelled.status).toBe(202);
      const { events } = await reading;
      expect(types(events).slice(-2)).toEqual(['run_error', 'run_complete']);
      expect(events.at(-2)!.data).toMatchObject({ runId, error: 'run_cancelled' });
      const record = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'cancelled');
      expect(record.body.sessions[0]).toMatchObject({ status: 'failed', error: { code: 'run_cancelled' } });
      const again = await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
      expect(again.status).toBe(409);
      expect(again.body.error).toBe('run_finished');
    });

    it('a failed block emits block_error and stops the run, or continues when its policy says so', async () => {
      const stop = wf.doc(wf.tool('t1', 'broken', 'broken_lookup', {}), wf.output('out', 'after'));
      const a = await workflowDocument(t, owner.token, stop);
      const stopped = await readNdjson(runUrl(a.documentId), { token: owner.token, body: { format: 'ndjson' } });
      expect(withoutChunks(stopped.events)).toEqual(['run_start', 'block_start', 'tool_start', 'block_error', 'block_end', 'run_error', 'run_complete']);
      expect(stopped.events[3]!.data).toEqual({ blockId: 'tool-t1', error: 'The tool service is down.', code: 'tool_unavailable' });
      expect(stopped.events[5]!.data).toMatchObject({ error: 'tool_unavailable' });
      const continued = await readNdjson(runUrl(a.documentId), { token: owner.token, body: { format: 'ndjson', onError: 'continue' } });
      expect(withoutChunks(continued.events)).toEqual(['run_start', 'block_start', 'tool_start', 'block_error', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete']);
      const perBlock = wf.doc(wf.tool('t1', 'broken', 'broken_lookup', {}, { onError: 'continue' }), wf.output('out', 'after {{ t1 }}'));
      const b = await workflowDocument(t, owner.token, perBlock);
      const r = await t.request('POST', `/documents/${b.documentId}/run`, { token: owner.token, body: { stream: false } });
      expect(r.body).toMatchObject({ status: 'completed', output: 'after ' });
      expect(r.body.sessions[0]).toMatchObject({ status: 'failed', error: { code: 'tool_unavailable' } });
    });

    it('debug mode runs the given content and stores nothing', async () => {
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('stored', 'stored content')));
      const { events } = await readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson', content: wf.doc(wf.input('x'), wf.output('o', 'debug {{ x }}')), inputs: { x: 'yes' } } });
      expect(events.at(-1)!.data.sessions.map((s: { output: string }) => s.output)).toEqual(['yes', 'debug yes']);
      expectDense(events.map((e) => e.seq));
      const list = await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token });
      expect(list.body.total).toBe(0);
      const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, content: wf.doc(wf.output('o', 'plain')) } });
      expect(r.body).toMatchObject({ status: 'completed', output: 'plain', documentId });
    });

    describe('errors', () => {
      it('400 invalid_inputs with details when inputs fail the input blocks', async () => {
        const content = wf.doc(wf.input('topic', { required: true }), wf.input('count', { type: 'integer' }));
        const { documentId } = await workflowDocument(t, owner.token, content);
        const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { count: 'three', extra: 1 } } });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('invalid_inputs');
        expect(r.body.details).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ field: 'inputs.topic', constraint: 'required' }),
            expect.objectContaining({ field: 'inputs.count', constraint: 'isInteger' }),
            expect.objectContaining({ field: 'inputs.extra', constraint: 'unknown' }),
          ]),
        );
      });

      it('400 for a bad body, a timeout above the maximum, or a block that cannot run', async () => {
        const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('x', 'echo', '')));
        const bad = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { format: 'xml' } });
        expect(bad.status).toBe(400);
        expect(bad.body.error).toBe('validation_failed');
        const long = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { timeout: 31 } });
        expect(long.status).toBe(400);
        expect(long.body).toMatchObject({ error: 'timeout_too_large', max_timeout: 30 });
        const invalid = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: {} });
        expect(invalid.status).toBe(400);
        expect(invalid.body.error).toBe('invalid_workflow');
        expect(invalid.body.details[0].field).toBe('content.0.attrs.prompt');
        const notDoc = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { content: { type: 'paragraph' } } });
        expect(notDoc.status).toBe(400);
        expect(notDoc.body.error).toBe('invalid_content');
      });

      it('403 for an API key or agent token (JWT only)', async () => {
        const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('o', 'x')));
        for (const token of [owner.apiKey, owner.agentToken]) {
          const r = await t.request('POST', `/documents/${documentId}/run`, { token, body: {} });
          expect(r.status).toBe(403);
          expect(r.body.error).toBe('credential_not_allowed');
        }
      });

      it('403 without the execute permission; 404 for a missing or hidden document', async () => {
        const project = await createProject(t, owner.token, { access: 'public' });
        const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('o', 'x')), project);
        const reader = await actor(t);
        const r = await t.request('POST', `/documents/${documentId}/run`, { token: reader.token, body: {} });
        expect(r.status).toBe(403);
        expect(r.body.error).toBe('execute_permission_required');
        const missing = await t.request('POST', `/documents/00000000-0000-7000-8000-000000000000/run`, { token: owner.token, body: {} });
        expect(missing.status).toBe(404);
        expect(missing.body.error).toBe('document_not_found');
        const hidden = await workflowDocument(t, owner.token, wf.doc(wf.output('o', 'x')), await createProject(t, owner.token, { access: 'private' }));
        const other = await t.request('POST', `/documents/${hidden.documentId}/run`, { token: reader.token, body: {} });
        expect(other.status).toBe(404);
        const runs = await t.request('GET', `/documents/${hidden.documentId}/runs`, { token: reader.token });
        expect(runs.status).toBe(404);
      });

      it('402 insufficient_credits with the balance and the shortfall', async () => {
        const poor = await actor(t);
        const content = wf.doc(...Array.from({ length: 25 }, (_, i) => wf.llm(`l${i}`, 'echo', 'hi')));
        const { documentId } = await workflowDocument(t, poor.token, content);
        const r = await t.request('POST', `/documents/${documentId}/run`, { token: poor.token, body: {} });
        expect(r.status).toBe(402);
        expect(r.body).toMatchObject({ error: 'insufficient_credits', balance: 100, required: 126, shortfall: 26 });
      });

      it('400 no_team_associated for a run with no team to bill (the entry point the Block API uses)', async () => {
        const error = await t.kernel
          .get(RunService)
          .start(t.kernel.fork(), { userId: owner.userId, documentId: null, projectId: null, teamId: null, content: wf.doc(wf.output('o', 'x')), source: 'test', store: false })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TrellisError);
        expect((error as TrellisError).status).toBe(400);
        expect((error as TrellisError).code).toBe('no_team_associated');
      });
    });
  });
});

describe.each(testDatabases())('balance check failure on $name', (db) => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost(db, 'node');
  });
  afterAll(() => t?.close());

  it('500 balance_check_failed when the balance cannot be read; no run is stored', async () => {
    const owner = await actor(t);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('o', 'x')));
    const connection = t.kernel.fork().getConnection();
    await connection.execute('alter table billing_credit_balances rename to billing_credit_balances_away');
    try {
      const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: {} });
      expect(r.status).toBe(500);
      expect(r.body.error).toBe('balance_check_failed');
    } finally {
      await connection.execute('alter table billing_credit_balances_away rename to billing_credit_balances');
    }
    const list = await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token });
    expect(list.body.total).toBe(0);
  });
});
