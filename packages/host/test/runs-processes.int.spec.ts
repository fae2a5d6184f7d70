import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide, pubSubServiceIdentifier } from '@trellis/core';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually } from './documents.fixtures.js';
import { expectDense, sharedDatabase, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse, ScriptedGateway } from './support/run-clients.js';

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

// Two host processes' worth of kernels share one database and one Redis: a run executing in one
// streams to clients of the other, and a cancel sent to the other stops it.
describe.each(testDatabases())('runs across hosts through Redis on $name', (base) => {
  const db = sharedDatabase(base);
  const channelPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
  let a: TestHost;
  let b: TestHost;
  beforeAll(async () => {
    const start = () =>
      startTestHost(db, 'uws', {
        adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: redisUrl, channelPrefix })), provide(aiGatewayServiceIdentifier, new ScriptedGateway())],
      });
    a = await start();
    b = await start();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db.cleanup();
  });

  it('a client that drops a stream of host A reconnects to host B with Last-Event-ID and gets every missed event once', async () => {
    const owner = await actor(a);
    const { documentId } = await workflowDocument(a, owner.token, wf.doc(wf.input('x'), wf.llm('ticks', 'slow', 'count {{ x }}'), wf.output('out', '{{ ticks }}')));
    const first = await readNdjson(`${a.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson', inputs: { x: 'up' } }, stopAfter: 8 });
    const runId = first.events[0]!.data.runId;
    const rest = await readSse(`${b.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: first.events.at(-1)!.seq });
    const all = [...first.events, ...rest.events];
    expectDense(all.map((e) => e.seq));
    expect(all.at(-1)!.type).toBe('run_complete');
    expect(all.filter((e) => e.type === 'block_chunk')).toHaveLength(30);
    // The same stream read live from B from the start equals the log.
    const replay = await readNdjson(`${b.url}/documents/${documentId}/runs/${runId}/events?format=ndjson`, { method: 'GET', token: owner.token });
    expect(replay.events).toEqual(all);
  });

  it('clients that drop a burst of chunks mid-run and reconnect to either host get each missed event once, chunks stored in batches included', async () => {
    const owner = await actor(a);
    // 6,000 chunks over about a second: past three batches of the log (2,000 each), with readers
    // reconnecting while chunks are published but not yet stored.
    const code = "for (let i = 0; i < 6000; i++) { emit('c' + i + ' '); if (i % 20 === 19) { const until = Date.now() + 3; while (Date.now() < until) {} } }\nreturn 'done';";
    const { documentId } = await workflowDocument(a, owner.token, wf.doc(wf.code('burst', code), wf.output('out', '{{ burst }}')));
    const first = await readNdjson(`${a.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' }, stopAfter: 900 });
    const runId = first.events[0]!.data.runId;
    const all = [...first.events];
    // Reconnect, drop again, alternating hosts and formats, until the run completes.
    for (let round = 0; all.at(-1)!.type !== 'run_complete'; round++) {
      expect(round).toBeLessThan(20);
      const host = round % 2 === 0 ? b : a;
      const url = `${host.url}/documents/${documentId}/runs/${runId}/events`;
      const next =
        round % 2 === 0
          ? await readSse(url, { token: owner.token, lastEventId: all.at(-1)!.seq, stopAfter: 1_300 })
          : await readNdjson(`${url}?format=ndjson&after=${all.at(-1)!.seq}`, { method: 'GET', token: owner.token, stopAfter: 1_300 });
      all.push(...next.events);
    }
    expectDense(all.map((e) => e.seq));
    const chunks = all.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta);
    expect(chunks.join('')).toBe(Array.from({ length: 6000 }, (_, i) => `c${i} `).join(''));
    // run_complete was visible: the stored log is complete, and replays the same events from either host.
    const replay = await readNdjson(`${b.url}/documents/${documentId}/runs/${runId}/events?format=ndjson`, { method: 'GET', token: owner.token });
    expect(replay.events).toEqual(all);
  });

  it('a cancel sent to host B stops the run executing on host A', async () => {
    const owner = await actor(a);
    const { documentId } = await workflowDocument(a, owner.token, wf.doc(wf.llm('ticks', 'slow', 'count')));
    const reading = readNdjson(`${a.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' } });
    const runs = await eventually(() => b.request('GET', `/documents/${documentId}/runs`, { token: owner.token }), (r) => r.body.items?.[0]?.status === 'running');
    const runId = runs.body.items[0].id;
    const cancelled = await b.request('POST', `/documents/${documentId}/runs/${runId}/cancel`, { token: owner.token });
    expect(cancelled.status).toBe(202);
    const { events } = await reading;
    expect(events.at(-2)).toMatchObject({ type: 'run_error', data: { error: 'run_cancelled' } });
    expect(events.filter((e) => e.type === 'block_chunk').length).toBeLessThan(30);
  });
});

// One host stops and another starts on the same database: a waiting run is resumed by the new
// one, and a run interrupted mid-block continues from its last completed block.
describe.each(testDatabases())('runs across a restart on $name', (base) => {
  const db = sharedDatabase(base);
  afterAll(() => db.cleanup());

  it('an ask block pauses; after a restart, resume continues the run and nothing is lost', async () => {
    const first = await startTestHost(db, 'node');
    const owner = await actor(first);
    const { documentId } = await workflowDocument(first, owner.token, wf.doc(wf.input('name'), wf.ask('mood', 'How is {{ name }}?'), wf.output('out', '{{ name }} is {{ mood }}')));
    const paused = await readSse(`${first.url}/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'Grace' } } });
    const waiting = paused.events.at(-1)!;
    expect(waiting).toMatchObject({ type: 'run_waiting', data: { question: 'How is Grace?' } });
    await first.close();

    const second = await startTestHost(db, 'uws');
    try {
      const runId = waiting.data.runId;
      const r = await second.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'well' } });
      expect(r.status).toBe(202);
      const rest = await readSse(`${second.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: waiting.seq });
      expectDense([...paused.events, ...rest.events].map((e) => e.seq));
      const record = await second.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });
      expect(record.body).toMatchObject({ status: 'completed', output: 'Grace is well', inputs: { name: 'Grace' } });
    } finally {
      await second.close();
    }
  });

  it('a run interrupted by a stopping host continues from its last completed block in the next host', async () => {
    const first = await startTestHost(db, 'node', {
      adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())],
      config: { runs: { shutdownGraceMs: 0 } } as never,
    });
    const owner = await actor(first);
    const { documentId } = await workflowDocument(first, owner.token, wf.doc(wf.input('x'), wf.llm('work', 'hang', 'do {{ x }}'), wf.output('out', '{{ work }}')));
    const before = await readNdjson(`${first.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson', inputs: { x: 'it' } }, stopAfter: 5 });
    expect(before.events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_complete', 'block_end', 'block_start']);
    const runId = before.events[0]!.data.runId;
    await first.close();

    const second = await startTestHost(db, 'uws', {
      adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway({ hang: 'echo' }))],
      config: { runs: { staleAfterSeconds: 3, reaperIntervalMs: 200 } } as never,
    });
    try {
      const rest = await readSse(`${second.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: before.events.at(-1)!.seq });
      // The new attempt starts at the LLM block again (the input block stays done), numbered above every earlier event.
      expect(rest.events[0]).toMatchObject({ type: 'block_start', data: { blockId: 'llm-work' } });
      expect(rest.events[0]!.seq).toBeGreaterThan(before.events.at(-1)!.seq);
      expect(rest.events.at(-1)!.type).toBe('run_complete');
      const record = await eventually(() => second.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
      expect(record.body).toMatchObject({ output: 'Echo: do it ', attempts: 2 });
      expect(record.body.sessions.map((s: { status: string }) => s.status)).toEqual(['completed', 'completed', 'completed']);
    } finally {
      await second.close();
    }
  });
});
