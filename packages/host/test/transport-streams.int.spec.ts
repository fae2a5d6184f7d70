import { get } from 'node:http';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { openResponse, RawConnection, readAll, readAtLeast, readSlowly, settled } from './support/http-client.js';
import { patternBytes, TransportProbe, transportTestModule } from './support/transport-test-module.js';

// Streams, HEAD and large bodies behave the same on both transports. No database work is
// involved, so these run on SQLite only.
const sqlite = testDatabases().find((db) => db.name === 'sqlite')!;

describe.each(transports)('streams and bodies over %s', (transport) => {
  let t: TestHost;
  let probe: TransportProbe;
  let port: number;
  beforeAll(async () => {
    probe = new TransportProbe();
    t = await startTestHost(sqlite, transport, { modules: [...coreModules, transportTestModule(probe)] });
    port = t.host.port;
  });
  afterAll(() => t?.close());

  it('delivers many SSE events in order to a standard EventSource client', async () => {
    const count = 2000;
    const received: number[] = [];
    const ids: string[] = [];
    const source = new EventSource(`${t.url}/test/sse?count=${count}&id=es`);
    try {
      await new Promise<void>((resolve, reject) => {
        source.addEventListener('tick', (event) => {
          received.push(JSON.parse(event.data).i);
          ids.push(event.lastEventId);
        });
        source.addEventListener('done', () => resolve());
        source.onerror = () => reject(new Error('EventSource failed'));
      });
    } finally {
      source.close();
    }
    expect(received).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(ids.at(-1)).toBe(String(count - 1));
    expect(probe.finished.has('es')).toBe(true);
  });

  it('streams NDJSON with many small items, each line whole and in order', async () => {
    const count = 20_000;
    const response = await fetch(`${t.url}/test/ndjson?count=${count}&id=nd`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    expect(response.headers.get('x-request-id')).toMatch(/.+/);
    const lines = (await response.text()).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(count);
    lines.forEach((line, i) => expect(JSON.parse(line)).toEqual({ i }));
  });

  it('pauses a fast producer while the client does not read, then delivers every byte', async () => {
    const lines = 32 * 1024; // 32 MiB in 1 KiB lines
    const { res } = await openResponse(`${t.url}/test/flood?lines=${lines}&id=bp`);
    expect(res.statusCode).toBe(200);
    res.pause();
    // Not reading: once socket buffers and the transport's queue are full, the producer waits.
    const stalledAt = await settled(() => probe.produced.get('bp') ?? 0);
    expect(stalledAt).toBeGreaterThan(0);
    expect(stalledAt).toBeLessThan(lines / 2);
    expect(probe.finished.has('bp')).toBe(false);
    // Reading again resumes it to the end, nothing lost or reordered.
    const body = await readAll(res.resume());
    expect(body.length).toBe(lines * 1024);
    for (const i of [0, 1, stalledAt - 1, stalledAt, stalledAt + 1, lines - 1]) {
      expect(body.subarray(i * 1024, i * 1024 + 10).toString()).toBe(String(i).padStart(10, '0'));
    }
    expect(body.toString('latin1').split('\n')).toHaveLength(lines + 1);
    expect(probe.finished.has('bp')).toBe(true);
  });

  it('delivers a burst a slow reader fell behind on without waiting for the next item', async () => {
    const bytes = 8 * 1024 * 1024;
    const { res } = await openResponse(`${t.url}/test/burst?bytes=${bytes}&id=burst`);
    res.pause();
    await settled(() => probe.produced.get('burst') ?? 0);
    // A slow reader catches up while the producer is silent: the whole burst arrives, also the
    // part the transport had to hold back when the socket was full.
    const burst = await readSlowly(res, bytes);
    expect(burst.subarray(0, bytes).equals(patternBytes(bytes))).toBe(true);
    probe.release('burst');
    const rest = await readAll(res.resume());
    expect(Buffer.concat([burst, rest]).subarray(bytes).toString()).toBe('END');
  });

  it('stops a slow endless stream (return() runs) when the client disconnects', async () => {
    const { req, res } = await openResponse(`${t.url}/test/ticker?id=gone-slow`);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    await readAtLeast(res, 3 * 'event: tick\ndata: {"i":0}\n\n'.length);
    expect(probe.finished.has('gone-slow')).toBe(false);
    req.destroy();
    await vi.waitFor(() => expect(probe.finished.has('gone-slow')).toBe(true), { timeout: 10_000 });
    const after = probe.produced.get('gone-slow');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(probe.produced.get('gone-slow')).toBe(after);
    await vi.waitFor(() => expect(t.kernel.http.activeRequests).toBe(0), { timeout: 10_000 });
  });

  it('stops a back-pressured stream when the client disconnects while it waits', async () => {
    const { req, res } = await openResponse(`${t.url}/test/flood?lines=1000000&id=gone-fast`);
    res.pause();
    await settled(() => probe.produced.get('gone-fast') ?? 0);
    expect(probe.finished.has('gone-fast')).toBe(false);
    req.destroy();
    await vi.waitFor(() => expect(probe.finished.has('gone-fast')).toBe(true), { timeout: 10_000 });
    expect(probe.produced.get('gone-fast')!).toBeLessThan(1_000_000);
    await vi.waitFor(() => expect(t.kernel.http.activeRequests).toBe(0), { timeout: 10_000 });
  });

  it('aborts the request signal of a slow handler when its client disconnects', async () => {
    const { req } = await new Promise<{ req: import('node:http').ClientRequest }>((resolve) => {
      const req = get(`${t.url}/test/slow?id=gone-request`, { agent: false });
      req.on('error', () => undefined);
      resolve({ req });
    });
    await vi.waitFor(() => expect(probe.events).toContain('slow-entered:gone-request'), { timeout: 10_000 });
    req.destroy();
    // The handler waited on ctx.signal: it goes on (and finishes) without being released.
    await vi.waitFor(() => expect(probe.events).toContain('slow-finished:gone-request'), { timeout: 10_000 });
    await vi.waitFor(() => expect(t.kernel.http.activeRequests).toBe(0), { timeout: 10_000 });
  });

  it('sends a large body whole, with its length', async () => {
    const bytes = 5 * 1024 * 1024 + 17;
    const response = await fetch(`${t.url}/test/big?bytes=${bytes}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(bytes));
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.equals(patternBytes(bytes))).toBe(true);
  });

  it('streams large chunks whole (split into bounded writes on the way)', async () => {
    const bytes = 3 * 1024 * 1024 + 5;
    const response = await fetch(`${t.url}/test/big-stream?bytes=${bytes}&chunk=200000`);
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.length).toBe(bytes);
    expect(body.equals(patternBytes(bytes))).toBe(true);
  });

  it('gives handlers the same view of a request on every transport', async () => {
    const response = await fetch(`${t.url}/test/whoami?x=1`, { headers: { 'user-agent': 'probe/1.0', 'x-twice': 'a', 'X-Mixed-Case': 'B' } });
    const seen = (await response.json()) as any;
    expect(seen.ip).toBe('127.0.0.1');
    expect(seen.userAgent).toBe('probe/1.0');
    expect(seen.method).toBe('GET');
    expect(seen.headers['x-mixed-case']).toBe('B');
    expect(seen.headers['host']).toBe(`127.0.0.1:${port}`);
  });

  it('answers HEAD with the GET head and no body, and keeps the connection usable', async () => {
    const get = await t.request('GET', '/healthz');
    const raw = await RawConnection.open(port);
    try {
      const head = await raw.exchange('HEAD /healthz HTTP/1.1\r\nhost: test\r\n\r\n', { noBody: true });
      expect(head.status).toBe(200);
      expect(head.headers['content-type']).toBe(get.headers.get('content-type'));
      expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.text)));
      expect(head.headers['x-request-id']).toMatch(/.+/);
      // The same connection answers the next request: no body bytes were sent after the head.
      const next = await raw.exchange('GET /healthz HTTP/1.1\r\nhost: test\r\n\r\n');
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body)).toEqual({ status: 'ok' });
      const missing = await raw.exchange('HEAD /nope HTTP/1.1\r\nhost: test\r\n\r\n', { noBody: true });
      expect(missing.status).toBe(404);
      const again = await raw.exchange('GET /readyz HTTP/1.1\r\nhost: test\r\n\r\n');
      expect(again.status).toBe(200);
      expect(raw.leftover).toBe(0);
    } finally {
      raw.close();
    }
  });

  it('answers HEAD on a stream route with its head only and never runs the stream', async () => {
    const response = await fetch(`${t.url}/test/ticker?id=head-stream`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await response.text()).toBe('');
    expect(probe.produced.get('head-stream')).toBeUndefined();
    await vi.waitFor(() => expect(t.kernel.http.activeRequests).toBe(0), { timeout: 10_000 });
  });

  it('serves the API under server.basePath on the same transport', async () => {
    const based = await startTestHost(sqlite, transport, { config: { server: { basePath: '/api' } } });
    try {
      expect(based.url).toMatch(/\/api$/);
      expect((await based.request('GET', '/healthz')).status).toBe(200);
      const outside = await fetch(`${based.url.replace(/\/api$/, '')}/healthz`);
      expect(outside.status).toBe(404);
      expect(outside.headers.get('x-request-id')).toMatch(/.+/);
      expect(((await outside.json()) as any).error).toBe('route_not_found');
    } finally {
      await based.close();
    }
  });
});
