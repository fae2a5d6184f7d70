import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolCallIdempotencyKey } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson } from './support/run-clients.js';

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * The server http blocks call. `/json` answers `{ method, query, body }` (the body parsed as JSON
 * when it is); `/text` answers plain text; `/missing` 404; `/flaky` 503 on the first two requests
 * of each Idempotency-Key, then `{ attempt }`; `/big` 4,000 bytes; `/slow` never answers.
 * Every request is recorded.
 */
async function startServer(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const flaky = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', path: url.pathname, headers: req.headers, body });
      const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      switch (url.pathname) {
        case '/json': {
          let parsed: unknown = body;
          try {
            parsed = JSON.parse(body);
          } catch {
            /* a text body */
          }
          return json(200, { method: req.method, query: Object.fromEntries(url.searchParams), body: parsed });
        }
        case '/text':
          return res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(`hello ${url.searchParams.get('name') ?? ''}`);
        case '/missing':
          return json(404, { error: 'no such thing' });
        case '/flaky': {
          const key = String(req.headers['idempotency-key'] ?? '');
          const seen = (flaky.get(key) ?? 0) + 1;
          flaky.set(key, seen);
          return seen <= 2 ? json(503, { error: 'busy' }) : json(200, { attempt: seen });
        }
        case '/big':
          return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(4_000));
        case '/slow':
          return; // never answers: the block's timeoutMs ends it
        default:
          return json(404, {});
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const http = (name: string, attrs: Record<string, unknown>) => ({ type: 'httpBlock', attrs: { id: `http-${name}`, name, ...attrs } });
const base = wf.input('base', { required: true });

describe.each(testDatabases())('the http block on $name', (db) => {
  let t: TestHost;
  let closed: TestHost;
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer();
    t = await startTestHost(db, 'node', { config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, ai: { tools: { maxResponseBytes: 2_048 } } } as never });
    // The same, with the network guard closed (its default).
    closed = await startTestHost(db, 'node');
  });
  afterAll(async () => {
    await t?.close();
    await closed?.close();
    await server?.close();
  });

  /** Runs `content` with `inputs` (`stream: false`); the run's answer, its globalCtx by name and its events. */
  async function run(content: unknown, inputs: Record<string, unknown> = {}, host: TestHost = t) {
    const owner = await actor(host);
    const { documentId } = await workflowDocument(host, owner.token, content);
    const answer = await host.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, inputs: { base: server.url, ...inputs } } });
    expect(answer.status, answer.text).toBe(200);
    const runId = String(answer.body.runId);
    const { events } = await readNdjson(`${host.url}/documents/${documentId}/runs/${runId}/events?format=ndjson`, { method: 'GET', token: owner.token });
    const ctx = Object.fromEntries((answer.body.globalCtx as Array<{ name: string; value: unknown }>).map((e) => [e.name, e.value]));
    return { runId, record: answer.body, ctx, events };
  }

  it('sends a GET with a templated URL and headers, and a POST with a templated JSON body', async () => {
    const before = server.received.length;
    const { record, ctx, events, runId } = await run(
      wf.doc(
        base,
        wf.input('who'),
        wf.input('count', { type: 'integer' }),
        http('get', { method: 'GET', url: '{{ base }}/json?who={{ who }}', headers: { 'X-Who': 'agent {{ who }}' } }),
        http('post', { url: '{{ base }}/json', body: { who: '{{ who }}', count: '{{ count }}', label: '{{ count }} items', seen: '{{ get.body.query.who }}' } }),
        http('text', { method: 'GET', url: '{{ base }}/text?name={{ who }}' }),
        wf.output('out', '{{ post.status }} {{ text.body }}'),
      ),
      { who: 'Ann & Bo', count: 3 },
    );
    expect(record.status).toBe('completed');
    expect(ctx.get).toEqual({ status: 200, body: { method: 'GET', query: { who: 'Ann & Bo' }, body: '' } });
    expect(ctx.post).toEqual({ status: 200, body: { method: 'POST', query: {}, body: { who: 'Ann & Bo', count: 3, label: '3 items', seen: 'Ann & Bo' } } });
    expect(ctx.text).toEqual({ status: 200, body: 'hello Ann & Bo' });
    expect(ctx.out).toBe('200 hello Ann & Bo');
    const sent = server.received.slice(before);
    expect(sent.map((r) => r.method)).toEqual(['GET', 'POST', 'GET']);
    expect(sent[0]!.headers['x-who']).toBe('agent Ann & Bo');
    expect(sent[1]!.headers['content-type']).toBe('application/json');
    // Each call carries its block's idempotency key, as a tool block's.
    expect(sent.map((r) => r.headers['idempotency-key'])).toEqual(['http-get', 'http-post', 'http-text'].map((path) => toolCallIdempotencyKey({ runId, path, iteration: 0, callIndex: 0 })));
    // tool_start and tool_result, like a tool block; the result carries the key.
    const post = events.filter((e) => e.data.blockId === 'http-post').map((e) => e.type);
    expect(post).toEqual(['block_start', 'tool_start', 'tool_result', 'block_complete', 'block_end']);
    expect(events.find((e) => e.type === 'tool_result' && e.data.blockId === 'http-post')!.data).toMatchObject({
      toolCallId: 'http-post:http',
      idempotencyKey: toolCallIdempotencyKey({ runId, path: 'http-post', iteration: 0, callIndex: 0 }),
      result: { status: 200 },
    });
  });

  it('fails the block with http_error on a non-2xx answer', async () => {
    const { record, events } = await run(wf.doc(base, http('lookup', { method: 'GET', url: '{{ base }}/missing' })));
    expect(record.status).toBe('failed');
    const error = events.find((e) => e.type === 'block_error')!.data;
    expect(error).toMatchObject({ blockId: 'http-lookup', code: 'http_error' });
    expect(String(error.error)).toMatch(/answered 404/);
    expect(events.some((e) => e.type === 'tool_result')).toBe(false);
  });

  it('retries under its retry policy with the same Idempotency-Key, then succeeds', async () => {
    const before = server.received.length;
    const { record, ctx, events, runId } = await run(wf.doc(base, http('charge', { url: '{{ base }}/flaky', body: { amount: 5 }, retry: { maxAttempts: 3, delayMs: 10 } })));
    expect(record.status).toBe('completed');
    expect(ctx.charge).toEqual({ status: 200, body: { attempt: 3 } });
    const keys = server.received.slice(before).map((r) => r.headers['idempotency-key']);
    const key = toolCallIdempotencyKey({ runId, path: 'http-charge', iteration: 0, callIndex: 0 });
    expect(keys).toEqual([key, key, key]);
    expect(events.filter((e) => e.type === 'block_error').map((e) => [e.data.code, e.data.attempt])).toEqual([
      ['http_error', 1],
      ['http_error', 2],
    ]);
  });

  it('gives its fallback once timeoutMs ended the request', async () => {
    const { record, ctx, events } = await run(wf.doc(base, http('late', { method: 'GET', url: '{{ base }}/slow', timeoutMs: 300, fallback: { value: { status: 0, body: 'gave up' } } })));
    expect(record.status).toBe('completed');
    expect(ctx.late).toEqual({ status: 0, body: 'gave up' });
    expect(events.find((e) => e.type === 'block_error')!.data).toMatchObject({ code: 'block_timeout', fallback: true });
  });

  it('fails with http_response_too_large past ai.tools.maxResponseBytes', async () => {
    const { record, events } = await run(wf.doc(base, http('big', { method: 'GET', url: '{{ base }}/big' })));
    expect(record.status).toBe('failed');
    expect(events.find((e) => e.type === 'block_error')!.data).toMatchObject({ code: 'http_response_too_large' });
  });

  it('is refused 127.0.0.1 by the network guard unless network.allowPrivateNetworks lets it through', async () => {
    const before = server.received.length;
    const { record, events } = await run(wf.doc(base, http('inside', { method: 'GET', url: '{{ base }}/json' })), {}, closed);
    expect(record.status).toBe('failed');
    expect(events.find((e) => e.type === 'block_error')!.data).toMatchObject({ blockId: 'http-inside', code: 'destination_refused' });
    expect(server.received.length).toBe(before);
  });

  it('refuses wrong attrs before the run starts, per field', async () => {
    const owner = await actor(t);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(http('bad', { method: 'FETCH', url: 'ftp://example.com/' })));
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_workflow');
    expect(r.body.details).toEqual([
      expect.objectContaining({ field: 'content.0.attrs.method', constraint: 'isIn' }),
      expect.objectContaining({ field: 'content.0.attrs.url', constraint: 'isUrl' }),
    ]);
  });
});
