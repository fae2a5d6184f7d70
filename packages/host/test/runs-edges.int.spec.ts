import { Ajv2020 } from 'ajv/dist/2020.js';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, clockServiceIdentifier, entityManagerServiceIdentifier, ManualClock, provide, Run, RunService, type RunStore } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse, runEventTypes, ScriptedGateway, type ReadEvent } from './support/run-clients.js';

/**
 * Runs at their edges, over real sockets on both databases: bad run and resume bodies, a cancel
 * at an ask block, the text of stored events and outputs, durations, the OpenAPI contract of the
 * run bodies and block flags, keep-alives on quiet streams, 204 once a finished run's events were
 * all delivered, Idempotency-Key, and races (cancel against resume, parallel deploys, first
 * deployment settings and deletes).
 */

type Json = Record<string, any>;
const types = (events: ReadEvent[]) => events.map((e) => e.type);
const terminal = ['completed', 'failed', 'timed_out', 'cancelled'];

/** Reads a response body as text until `until` holds for what came so far (or the body ends), then drops the connection. */
async function readRaw(url: string, init: RequestInit, until: (text: string) => boolean): Promise<{ status: number; text: string }> {
  const abort = new AbortController();
  const response = await fetch(url, { ...init, signal: abort.signal });
  const decoder = new TextDecoder();
  let text = '';
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (until(text)) break;
    }
  } finally {
    abort.abort();
  }
  return { status: response.status, text };
}

let counter = 0;

describe.each(testDatabases())('run edges on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let owner: Actor;
  let other: Actor;
  beforeAll(async () => {
    host = await startTestHost(db, 'node', {
      adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())],
      config: { runs: { maxTimeoutSeconds: 60 } } as never,
    });
    t = host;
    owner = await actor(t);
    other = await actor(t);
  });
  afterAll(() => host?.close());

  const runUrl = (documentId: string) => `${t.url}/documents/${documentId}/run`;
  const askFlow = () => wf.doc(wf.input('name'), wf.ask('colour', 'Which colour for {{ name }}?'), wf.output('out', '{{ name }} likes {{ colour }}'));

  async function waitingRun(documentId: string): Promise<string> {
    const paused = await readSse(runUrl(documentId), { token: owner.token, body: { inputs: { name: 'Ada' } } });
    expect(paused.events.at(-1)!.type).toBe('run_waiting');
    return paused.events[0]!.data.runId as string;
  }

  const record = (documentId: string, runId: string) => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });
  const ended = (documentId: string, runId: string) => eventually(() => record(documentId, runId), (r) => terminal.includes(r.body.status), 'the run to end');

  it('refuses a fractional timeout with 400 validation_failed (document run) and 422 (Block API), storing nothing', async () => {
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.output('out', '{{ name }}')));
    const refused = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'x' }, timeout: 1.5, stream: false } });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error).toBe('validation_failed');
    expect(refused.body.details.map((d: Json) => d.field)).toContain('timeout');
    const page = await t.request('POST', `/block/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'x' }, timeout: 2.25, stream: false } });
    expect(page.status, page.text).toBe(422);
    expect((await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.total).toBe(0);
    const whole = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'x' }, timeout: 2, stream: false } });
    expect(whole.status, whole.text).toBe(200);
    expect((await record(documentId, whole.body.runId)).body.timeout).toBe(2);
  });

  it('a resume without an answer is 400 and leaves the run waiting; with one it continues', async () => {
    const { documentId } = await workflowDocument(t, owner.token, askFlow());
    const runId = await waitingRun(documentId);
    for (const body of [{}, undefined, { answer: null }]) {
      const refused = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, ...(body ? { body } : {}) });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.error).toBe('validation_failed');
    }
    expect((await record(documentId, runId)).body.status).toBe('waiting');
    expect((await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'green' } })).status).toBe(202);
    expect((await ended(documentId, runId)).body.output).toBe('Ada likes green');
  });

  it('cancelling a run that waits at an ask block ends that block on the stream (block_error, block_end)', async () => {
    const { documentId } = await workflowDocument(t, owner.token, askFlow());
    const runId = await waitingRun(documentId);
    const cancelled = await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
    expect(cancelled.status, cancelled.text).toBe(202);
    expect(cancelled.body.status).toBe('cancelled');
    const { events } = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, untilComplete: true });
    expectDense(events.map((e) => e.seq));
    const started = events.filter((e) => e.type === 'block_start').map((e) => e.data.blockId);
    const endedBlocks = events.filter((e) => e.type === 'block_end').map((e) => e.data.blockId);
    expect(endedBlocks).toEqual(started);
    expect(types(events).slice(-5)).toEqual(['run_waiting', 'block_error', 'block_end', 'run_error', 'run_complete']);
    expect(events.find((e) => e.type === 'block_error')!.data).toEqual({ blockId: 'ask-colour', error: 'The run was cancelled.', code: 'run_cancelled' });
    expect(events.at(-1)!.data.sessions.find((s: Json) => s.blockId === 'ask-colour')).toMatchObject({ status: 'failed', error: { code: 'run_cancelled' } });
  });

  it('replayed events and the stored output keep the key order of the live stream', async () => {
    const content = wf.doc(wf.code('pick', 'return { zeta: 1, a: { yy: 2, b: 3 }, mm: [{ long: 1, s: 2 }] };'), wf.output('out', '{{ pick.zeta }}'));
    const { documentId } = await workflowDocument(t, owner.token, content);
    const live = await readSse(runUrl(documentId), { token: owner.token, body: {} });
    const runId = live.events[0]!.data.runId as string;
    const replay = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token });
    expect(replay.events.map((e) => JSON.stringify(e.data))).toEqual(live.events.map((e) => JSON.stringify(e.data)));
    const picked = live.events.find((e) => e.type === 'block_complete' && e.data.blockId === 'code-pick')!.data.output;
    expect(JSON.stringify(picked)).toBe('{"zeta":1,"a":{"yy":2,"b":3},"mm":[{"long":1,"s":2}]}');
    const stored = await ended(documentId, runId);
    const ctx = stored.body.globalCtx.find((c: Json) => c.name === 'pick').value;
    expect(JSON.stringify(ctx)).toBe(JSON.stringify(picked));
    const quiet = await t.request('POST', runUrl(documentId).slice(t.url.length), { token: owner.token, body: { stream: false } });
    expect(JSON.stringify(quiet.body.globalCtx.find((c: Json) => c.name === 'pick').value)).toBe(JSON.stringify(picked));
  });

  it('a replay from the start is 200; once the client has every event of a finished run it is 204, and an EventSource stops', async () => {
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.output('out', '{{ name }}')));
    const live = await readSse(runUrl(documentId), { token: owner.token, body: { inputs: { name: 'x' } } });
    const runId = live.events[0]!.data.runId as string;
    const last = live.events.at(-1)!.seq;
    await ended(documentId, runId);
    const url = `${t.url}/documents/${documentId}/runs/${runId}/events`;
    expect((await readSse(url, { token: owner.token, lastEventId: last - 1 })).events.map((e) => e.seq)).toEqual([last]);
    const done = await t.request('GET', `/documents/${documentId}/runs/${runId}/events?after=${last}`, { token: owner.token });
    expect(done.status).toBe(204);
    expect(done.text).toBe('');
    expect((await readSse(url, { token: owner.token, lastEventId: last + 5 })).status).toBe(204);

    // An EventSource left open: the whole log, the end of the stream, one reconnect with
    // Last-Event-ID (204), then it stays closed.
    const connections: Array<{ lastEventId: string | null; status: number }> = [];
    const received: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const source = new EventSource(url, {
        fetch: async (input, init) => {
          const headers: Record<string, string> = { ...(init.headers as Record<string, string>), authorization: `Bearer ${owner.token}` };
          const response = await fetch(input, { ...init, headers });
          connections.push({ lastEventId: headers['Last-Event-ID'] ?? headers['last-event-id'] ?? null, status: response.status });
          return response;
        },
      });
      for (const type of runEventTypes) source.addEventListener(type, (message) => void received.push(Number(message.lastEventId)));
      source.onerror = () => {
        if (connections.length < 2) return; // the first end of the stream: it reconnects
        setTimeout(() => {
          if (source.readyState === EventSource.CLOSED) resolve();
          else reject(new Error(`still ${source.readyState} after a 204`));
          source.close();
        }, 100);
      };
    });
    expect(received).toEqual(live.events.map((e) => e.seq));
    expect(connections).toEqual([
      { lastEventId: null, status: 200 },
      { lastEventId: String(last), status: 204 },
    ]);
  });

  it('the OpenAPI document: run bodies are optional, a resume body is required, confirm=1 and nextVersion=1 are valid', async () => {
    const spec = (await t.request('GET', '/openapi.json')).body;
    expect(spec.paths['/documents/{documentId}/run'].post.requestBody.required).toBe(false);
    expect(spec.paths['/documents/{documentId}/runs/{runId}/resume'].post.requestBody.required).toBe(true);
    expect(spec.paths['/block/{pageId}/run'].post.requestBody.required).toBe(true);
    const ajv = new Ajv2020({ strict: false });
    const param = (path: string, method: string, name: string) => spec.paths[path][method].parameters.find((p: Json) => p.name === name).schema;
    const confirm = ajv.compile(param('/block/{projectId}/{pageId}', 'delete', 'confirm'));
    const nextVersion = ajv.compile(param('/project/{projectId}/search', 'get', 'nextVersion'));
    for (const value of ['1', 'true', '0', 'false']) {
      expect(confirm(value), value).toBe(true);
      expect(nextVersion(value), value).toBe(true);
    }
    expect(confirm('yes')).toBe(false);
    // And the server takes what the document says.
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('out', 'hello')));
    const empty = await fetch(runUrl(documentId) + '', { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
    expect(empty.status).toBe(200);
    expect(await empty.text()).toContain('event: run_complete');
  });

  describe('Idempotency-Key', () => {
    it('a repeated document run attaches to the run the first request started (stream false and SSE); another body is 422', async () => {
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.output('out', 'hi {{ name }}')));
      const key = `key-${++counter}-${Date.now()}`;
      const first = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, headers: { 'idempotency-key': key }, body: { inputs: { name: 'x' }, stream: false } });
      expect(first.status, first.text).toBe(200);
      const again = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, headers: { 'idempotency-key': `"${key}"` }, body: { inputs: { name: 'x' }, stream: false } });
      expect(again.body.runId).toBe(first.body.runId);
      // SSE through the eventsource client: the same run's events from the start.
      const streamed = await new Promise<ReadEvent[]>((resolve, reject) => {
        const events: ReadEvent[] = [];
        const source = new EventSource(runUrl(documentId), {
          fetch: (input, init) =>
            fetch(input, { ...init, method: 'POST', body: JSON.stringify({ inputs: { name: 'x' } }), headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', 'idempotency-key': key } }),
        });
        for (const type of runEventTypes) {
          source.addEventListener(type, (message) => {
            events.push({ seq: Number(message.lastEventId), type, data: JSON.parse(message.data) });
            if (type === 'run_complete') {
              source.close();
              resolve(events);
            }
          });
        }
        source.onerror = (error) => {
          source.close();
          reject(new Error(String((error as { message?: string }).message)));
        };
      });
      expect(streamed[0]!.data.runId).toBe(first.body.runId);
      expectDense(streamed.map((e) => e.seq));
      // A client library's retry (same key, Last-Event-ID): the events after it, then 204 once it has them all.
      const retry = (lastEventId: number) =>
        readNdjson(runUrl(documentId), { token: owner.token, headers: { 'idempotency-key': key, 'last-event-id': String(lastEventId) }, body: { inputs: { name: 'x' }, format: 'ndjson' } });
      expect((await retry(2)).events.map((e) => e.seq)).toEqual(streamed.slice(2).map((e) => e.seq));
      const complete = await retry(streamed.at(-1)!.seq);
      expect(complete.status).toBe(204);
      expect((await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.total).toBe(1);

      const reused = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, headers: { 'idempotency-key': key }, body: { inputs: { name: 'y' }, stream: false } });
      expect(reused.status, reused.text).toBe(422);
      expect(reused.body.error).toBe('idempotency_key_reused');
      const malformed = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, headers: { 'idempotency-key': 'x'.repeat(256) }, body: { stream: false, inputs: { name: 'x' } } });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error).toBe('invalid_idempotency_key');
      // The key is the caller's: another user's same key starts their own run.
      const doc2 = await workflowDocument(t, other.token, wf.doc(wf.input('name'), wf.output('out', 'hi {{ name }}')));
      const theirs = await t.request('POST', `/documents/${doc2.documentId}/run`, { token: other.token, headers: { 'idempotency-key': key }, body: { inputs: { name: 'x' }, stream: false } });
      expect(theirs.status).toBe(200);
      expect(theirs.body.runId).not.toBe(first.body.runId);
    });

    it('parallel requests with one key start one run', async () => {
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.output('out', 'hi {{ name }}')));
      const key = `parallel-${++counter}-${Date.now()}`;
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => t.request('POST', `/documents/${documentId}/run`, { token: owner.token, headers: { 'idempotency-key': key }, body: { inputs: { name: 'x' }, stream: false } })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
      expect(new Set(answers.map((a) => a.body.runId)).size).toBe(1);
      expect((await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.total).toBe(1);
    });

    it('POST /block/{bid}/api: a repeated call of the same caller attaches; another caller or body does not', async () => {
      const project = await createProject(t, owner.token);
      const created = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: `Api ${++counter}`, type: 'workflow', content: wf.doc(wf.input('name'), wf.output('out', 'hi {{ name }}')) } });
      expect(created.status, created.text).toBe(201);
      const bid = created.body.id as string;
      expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'public' } })).status).toBe(201);
      const key = `api-${counter}`;
      const call = (token: string | undefined, name: string) => t.request('POST', `/block/${bid}/api`, { ...(token ? { token } : {}), headers: { 'idempotency-key': key }, body: { inputs: { name }, stream: false } });
      const first = await call(owner.token, 'x');
      expect(first.status, first.text).toBe(200);
      const again = await readNdjson(`${t.url}/block/${bid}/api`, { token: owner.token, headers: { 'idempotency-key': key }, body: { inputs: { name: 'x' }, format: 'ndjson' } });
      expect(again.events[0]!.data.runId).toBe(first.body.runId);
      expect(again.events.at(-1)!.type).toBe('run_complete');
      expect((await call(owner.token, 'z')).status).toBe(422);
      const anonymous = await call(undefined, 'x');
      expect(anonymous.status).toBe(200);
      expect(anonymous.body.runId).not.toBe(first.body.runId);
      expect((await call(undefined, 'x')).body.runId).toBe(anonymous.body.runId);
    });
  });

  it('cancel racing resume: no 5xx, and a cancel that was accepted ends the run cancelled', async () => {
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.ask('colour', 'Which colour?'), wf.llm('think', 'slow', 'go'), wf.output('out', '{{ colour }}')));
    // TRELLIS_TEST_ROUNDS: more rounds when hunting a race.
    for (let round = 0; round < Number(process.env.TRELLIS_TEST_ROUNDS ?? 6); round++) {
      const runId = await waitingRun(documentId);
      const [resume, cancel] = await Promise.all([
        t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'green' } }),
        t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token }),
      ]);
      expect([202, 409], resume.text).toContain(resume.status);
      expect([202, 409], cancel.text).toContain(cancel.status);
      const final = await ended(documentId, runId);
      if (cancel.status === 202) expect(final.body.status, `round ${round}: resume ${resume.status}`).toBe('cancelled');
      else expect(final.body.status).toBe('completed');
      const { events } = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, untilComplete: true });
      expectDense(events.map((e) => e.seq));
      expect(types(events).filter((type) => type === 'run_complete')).toHaveLength(1);
    }
  });

  it('an ending another attempt took over stores none of its events; the ending that took it over ends the run', async () => {
    // What the race of a cancel and a resume's continuation does, made certain: the first ending
    // (a cancel) claims its attempt and reads the run; just before its final write another
    // attempt takes the run over, so that write is refused. None of its events may be stored or
    // published either: the other ending numbers its own right after the run's last stored event.
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.ask('colour', 'Which colour?'), wf.output('out', '{{ colour }}')));
    const runId = await waitingRun(documentId);
    const runs = t.kernel.container.get(RunService);
    // The runs' store, as the service's control part holds it (to step in at the right moment).
    const store = (runs as unknown as { control: { ctx: { store: RunStore } } }).control.ctx.store;
    const em = t.kernel.container.get(entityManagerServiceIdentifier);
    const append = store.append.bind(store);
    let takenOver = false;
    store.append = (async (id: string, ...rest: Parameters<RunStore['append']> extends [string, ...infer R] ? R : never) => {
      if (id === runId && !takenOver) {
        takenOver = true;
        const run = await em.fork().findOneOrFail(Run, { id: runId });
        await em.fork().nativeUpdate(Run, { id: runId, attempt: run.attempt }, { attempt: run.attempt + 1 });
      }
      return append(id, ...rest);
    }) as RunStore['append'];
    try {
      await runs.cancelRun(runId);
    } finally {
      store.append = append;
    }
    expect(takenOver).toBe(true);
    expect((await record(documentId, runId)).body.status).toBe('waiting');
    expect((await store.read(runId, 0)).map((event) => event.type).filter((type) => ['block_error', 'run_error', 'run_complete'].includes(type))).toEqual([]);
    // The attempt that took it over ends it (here: the next cancel).
    expect((await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token })).status).toBe(202);
    expect((await ended(documentId, runId)).body.status).toBe('cancelled');
    const { events } = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, untilComplete: true });
    expectDense(events.map((e) => e.seq));
    expect(types(events).slice(-5)).toEqual(['run_waiting', 'block_error', 'block_end', 'run_error', 'run_complete']);
  });

  describe('deployments in parallel', () => {
    let projectId: string;
    beforeAll(async () => {
      projectId = (await createProject(t, owner.token)).id;
    });
    const newBlock = async () => {
      const r = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Par ${++counter}`, type: 'workflow', content: wf.doc(wf.output('out', 'x')) } });
      expect(r.status, r.text).toBe(201);
      return r.body.id as string;
    };
    const versionsOf = async (bid: string) => (await t.request('GET', `/project/${projectId}/versions/${bid}?size=100`, { token: owner.token })).body.items.map((v: Json) => v.version).sort();

    it('deploys without a version each get the next free version', async () => {
      const bid = await newBlock();
      const answers = await Promise.all(Array.from({ length: 5 }, () => t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'team' } })));
      expect(answers.map((a) => a.status), answers.map((a) => a.text).join('\n')).toEqual(Array(5).fill(201));
      expect(answers.map((a) => a.body.version.version ?? a.body.version).sort()).toEqual(['1', '2', '3', '4', '5']);
      expect(await versionsOf(bid)).toEqual(['1', '2', '3', '4', '5']);
    });

    it('parallel first deployment settings publish one version', async () => {
      for (let round = 0; round < 3; round++) {
        const bid = await newBlock();
        const answers = await Promise.all(Array.from({ length: 4 }, () => t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { access: 'team', deployType: 'form' } })));
        expect(answers.map((a) => a.status), answers.map((a) => a.text).join('\n')).toEqual(Array(4).fill(200));
        expect(await versionsOf(bid)).toEqual(['1']);
        expect(answers.filter((a) => a.body.version !== null)).toHaveLength(1);
      }
    });

    it('of parallel deletes for good, one answers deleted and the others 404', async () => {
      for (let round = 0; round < 3; round++) {
        const bid = await newBlock();
        const answers = await Promise.all(Array.from({ length: 4 }, () => t.request('DELETE', `/block/${projectId}/${bid}?confirm=1`, { token: owner.token })));
        expect(answers.filter((a) => a.status === 200).map((a) => a.body.result)).toEqual(['deleted']);
        expect(answers.filter((a) => a.status === 404).map((a) => a.body.error)).toEqual(Array(3).fill('block_not_found'));
      }
    });
  });
});

describe.each(testDatabases())('run duration with a manual clock on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  beforeAll(async () => {
    t = await startTestHost(db, 'node', { adapters: [provide(clockServiceIdentifier, new ManualClock())] });
    owner = await actor(t);
  });
  afterAll(() => t?.close());

  it('run_complete.duration is the stored duration (one reading of the clock)', async () => {
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.input('name'), wf.output('out', '{{ name }}')));
    const live = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'x' } } });
    const runId = live.events[0]!.data.runId;
    const stored = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
    expect(live.events.at(-1)!.data.duration).toBe(stored.body.duration);
    const quiet = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'x' }, stream: false } });
    expect(quiet.body.duration).toBe((await t.request('GET', `/documents/${documentId}/runs/${quiet.body.runId}`, { token: owner.token })).body.duration);
  });
});

describe.each(testDatabases())('keep-alive on quiet streams on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    beforeAll(async () => {
      t = await startTestHost(db, transport, {
        adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())],
        config: { server: { streamKeepAliveMs: 150 } } as never,
      });
      owner = await actor(t);
    });
    afterAll(() => t?.close());

    it('SSE sends a comment and NDJSON a ping line while a model call is silent; the eventsource client reads the events as before', async () => {
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('think', 'hang', 'go'), wf.output('out', 'x')));
      const headers = { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' };
      const sse = await readRaw(`${t.url}/documents/${documentId}/run`, { method: 'POST', headers, body: '{}' }, (text) => text.split(': keep-alive\n\n').length > 2);
      expect(sse.status).toBe(200);
      expect(sse.text).toMatch(/^id: 1\nevent: run_start\n/);
      expect(sse.text.split(': keep-alive\n\n').length).toBeGreaterThan(2);
      const ndjson = await readRaw(`${t.url}/documents/${documentId}/run`, { method: 'POST', headers, body: '{"format":"ndjson"}' }, (text) => text.split('{"type":"ping"}\n').length > 2);
      expect(ndjson.text.split('\n').filter(Boolean).map((line) => JSON.parse(line).type)).toContain('ping');

      // The eventsource client: events only, across keep-alives, until the run is cancelled.
      const runs = (await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.items.map((r: Json) => r.id);
      for (const runId of runs) await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
      const reading = readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: {} });
      const runId = await eventually(
        async () => (await t.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.items.find((r: Json) => !runs.includes(r.id))?.id as string | undefined,
        (id) => id !== undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await t.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token })).status).toBe(202);
      const { events } = await reading;
      expectDense(events.map((e) => e.seq));
      expect(types(events)).toEqual(['run_start', 'block_start', 'block_error', 'block_end', 'run_error', 'run_complete']);
    });
  });
});
