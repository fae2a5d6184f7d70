import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson } from './support/run-clients.js';

/**
 * The per-block failure policy (docs/runs.md, "Failure policy") on a real host: a tool block whose
 * HTTP action calls a local flaky server (it fails the first `fail` calls of each key with 500),
 * retried with backoff; a block timeout; a fallback once the retries are exhausted. Every JSON
 * answer is checked against /openapi.json.
 */

type Json = Record<string, any>;

/** GET /flaky/:key?fail=N fails the first N calls of `key`; GET /slow waits 5 s. Counts calls per key, with their times. */
async function flakyServer(): Promise<{ url: string; calls: Map<string, number[]>; close: () => Promise<void> }> {
  const calls = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const [, route, key = ''] = url.pathname.split('/');
    const seen = [...(calls.get(key) ?? []), Date.now()];
    calls.set(key, seen);
    if (route === 'slow') {
      const timer = setTimeout(() => res.end(JSON.stringify({ late: true })), 5_000);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    const fail = Number(url.searchParams.get('fail') ?? 0);
    res.setHeader('content-type', 'application/json');
    if (seen.length <= fail) {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: 'flaky' }));
      return;
    }
    res.end(JSON.stringify({ key, calls: seen.length }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let counter = 0;

describe.each(testDatabases())('block failure policy on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let owner: Actor;
  let projectId: string;
  let flaky: Awaited<ReturnType<typeof flakyServer>>;
  let toolId: string;

  beforeAll(async () => {
    flaky = await flakyServer();
    host = await startTestHost(db, 'node', { config: { network: { allowPrivateNetworks: ['127.0.0.1'] } } });
    t = host;
    owner = await actor(t);
    projectId = (await createProject(t, owner.token)).id;
    const tool = await t.request('POST', '/ai/tools', {
      token: owner.token,
      body: {
        name: 'Flaky',
        actions: [
          { name: 'call', type: 'http', conf: { method: 'GET', url: `${flaky.url}/flaky/{{key}}?fail={{fail}}` } },
          { name: 'slow', type: 'http', conf: { method: 'GET', url: `${flaky.url}/slow/{{key}}` } },
        ],
      },
    });
    expect(tool.status, tool.text).toBe(201);
    toolId = tool.body.id;
  });
  afterAll(async () => {
    await host?.close();
    await flaky?.close();
  });

  const key = () => `k${++counter}-${db.name}-${Date.now()}`;
  const run = async (content: unknown) => {
    const { documentId } = await workflowDocument(t, owner.token, content, { id: projectId });
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.status, r.text).toBe(200);
    return { documentId, result: r.body as Json };
  };

  it('retries a failing block with backoff until it succeeds, each retry in the events and the session', async () => {
    const k = key();
    const content = wf.doc(wf.tool('fetch', toolId, 'call', { key: k, fail: 2 }, { retry: { maxAttempts: 4, delayMs: 100, factor: 3, maxDelayMs: 250 } }), wf.output('out', '{{ fetch.calls }}'));
    const { documentId } = await workflowDocument(t, owner.token, content, { id: projectId });
    const stream = await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' } });
    expect(flaky.calls.get(k)).toHaveLength(3);
    // The waits: 100 ms, then min(100 * 3, 250) ms (retryInMs below; no timing is asserted).
    const block = stream.events.filter((e) => e.data.blockId === 'tool-fetch' && ['block_start', 'block_error', 'block_complete', 'block_end'].includes(e.type));
    expect(block.map((e) => [e.type, e.data.attempt ?? null, e.data.retryInMs ?? null])).toEqual([
      ['block_start', null, null],
      ['block_error', 1, 100],
      ['block_start', 2, null],
      ['block_error', 2, 250],
      ['block_start', 3, null],
      ['block_complete', null, null],
      ['block_end', null, null],
    ]);
    expect(block[1]!.data).toMatchObject({ code: 'tool_call_failed', error: expect.stringContaining('500') });
    const runId = stream.events[0]!.data.runId;
    const record = await t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token });
    expect(record.body).toMatchObject({ status: 'completed', output: 3 });
    expect(record.body.sessions[0]).toMatchObject({ status: 'completed', attempts: [{ attempt: 1, code: 'tool_call_failed' }, { attempt: 2, code: 'tool_call_failed' }] });
  });

  it('fails the block once its attempts are spent, with the last error and every attempt in the session', async () => {
    const k = key();
    const { result } = await run(wf.doc(wf.tool('fetch', toolId, 'call', { key: k, fail: 9 }, { retry: { maxAttempts: 2, delayMs: 10 } })));
    expect(flaky.calls.get(k)).toHaveLength(2);
    expect(result).toMatchObject({ status: 'failed', error: { code: 'tool_call_failed' } });
    expect(result.sessions[0]).toMatchObject({ status: 'failed', attempts: [{ attempt: 1 }, { attempt: 2 }] });
  });

  it('stops an attempt at timeoutMs with block_timeout, and retries it', async () => {
    const k = key();
    const { result } = await run(wf.doc(wf.tool('wait', toolId, 'slow', { key: k }, { timeoutMs: 300, retry: { maxAttempts: 2, delayMs: 10 } })));
    expect(result).toMatchObject({ status: 'failed', error: { code: 'block_timeout' } });
    expect(flaky.calls.get(k)).toHaveLength(2);
    expect(result.sessions[0].attempts.map((a: Json) => a.code)).toEqual(['block_timeout', 'block_timeout']);
  });

  it('uses the fallback once the retries are exhausted (templates in it read earlier blocks)', async () => {
    const k = key();
    const content = wf.doc(
      wf.input('who', { default: 'spare' }),
      wf.tool('fetch', toolId, 'call', { key: k, fail: 9 }, { retry: { maxAttempts: 3, delayMs: 10, factor: 1 }, fallback: { value: { key: '{{ who }}', calls: 0 } } }),
      wf.output('out', '{{ fetch.key }}:{{ fetch.calls }}'),
    );
    const { result } = await run(content);
    expect(flaky.calls.get(k)).toHaveLength(3);
    expect(result).toMatchObject({ status: 'completed', output: 'spare:0' });
    expect(result.globalCtx.find((e: Json) => e.name === 'fetch').value).toEqual({ key: 'spare', calls: 0 });
    expect(result.sessions[1]).toMatchObject({ status: 'completed', fallback: true, attempts: [{ attempt: 1 }, { attempt: 2 }, { attempt: 3 }] });
  });

  it('a block without a policy fails at its first error, as before', async () => {
    const k = key();
    const { result } = await run(wf.doc(wf.tool('fetch', toolId, 'call', { key: k, fail: 1 })));
    expect(flaky.calls.get(k)).toHaveLength(1);
    expect(result).toMatchObject({ status: 'failed', error: { code: 'tool_call_failed' } });
    expect(result.sessions[0].attempts).toBeUndefined();
  });
});
