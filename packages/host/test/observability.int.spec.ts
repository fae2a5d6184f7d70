import { Writable } from 'node:stream';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrellisConfigInput } from '@trellis/core';
import { createHost, type Host } from '@trellis/host';
import { testDatabases, testJwtSecret, transports, type TestDatabase, type TransportName } from '@trellis/test-support';
import { WsProbe } from './support/realtime-clients.js';

interface ObservedHost {
  host: Host;
  url: string;
  lines: Array<Record<string, unknown>>;
  raw: string[];
  close(): Promise<void>;
}

/** A real host whose pino output is kept, line by line, for the test to read. */
async function startObservedHost(db: TestDatabase, transport: TransportName, config: TrellisConfigInput = {}): Promise<ObservedHost> {
  const handle = await db.create();
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const host = createHost({
    config: { ...config, server: { host: '127.0.0.1', port: 0, transport, ...config.server }, auth: { jwtSecret: testJwtSecret } } as TrellisConfigInput,
    database: handle.adapter,
    logger: pino({ level: 'info' }, sink),
  });
  await host.start();
  const lines: ObservedHost['lines'] = [];
  return {
    host,
    url: host.url,
    raw,
    get lines() {
      lines.length = 0;
      for (const line of raw) lines.push(JSON.parse(line) as Record<string, unknown>);
      return lines;
    },
    async close() {
      await host.stop();
      await handle.drop();
    },
  };
}

const accessLines = (h: ObservedHost) => h.lines.filter((line) => line['kind'] === 'access');

let lastText = '';

async function scrape(url: string, token?: string): Promise<ParsedFamily[]> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  lastText = await response.text();
  return parsePrometheusTextFormat(lastText);
}

/**
 * The `_count` series of a labelled histogram, read from the text of the last scrape (the parser
 * merges the series of a labelled histogram into one, so it cannot tell them apart).
 */
function histogramCount(name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of lastText.split('\n')) {
    const match = new RegExp(`^${name}_count\\{(.*)\\} (\\S+)$`).exec(line);
    if (match && wanted.every((pair) => match[1]!.split(',').includes(pair))) return Number(match[2]);
  }
  return 0;
}

function family(families: ParsedFamily[], name: string): ParsedFamily {
  const found = families.find((f) => f.name === name);
  if (!found) throw new Error(`no metric family ${name}`);
  return found;
}

function sample(families: ParsedFamily[], name: string, labels: Record<string, string>): number {
  const match = family(families, name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (!match) return 0;
  return Number(match.value ?? match.count);
}

const waitFor = async (check: () => boolean, ms = 2000) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe.each(testDatabases())('observability on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let h: ObservedHost;
    beforeAll(async () => {
      h = await startObservedHost(db, transport);
    });
    afterAll(() => h?.close());

    it('writes one access line per request with route pattern, status, duration, bytes, request id and principal, and no credential', async () => {
      const password = 'correct horse battery staple';
      const registered = await fetch(`${h.url}/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `obs-${transport}-${Date.now()}@example.com`, password }),
      });
      expect(registered.status).toBe(201);
      const { token, user } = (await registered.json()) as { token: string; user: { id: string } };
      const before = accessLines(h).length;

      const me = await fetch(`${h.url}/auth/me`, { headers: { authorization: `Bearer ${token}`, 'x-request-id': `obs-me-${transport}` } });
      const meBody = await me.arrayBuffer();
      const missing = await fetch(`${h.url}/no/such/route?access_token=${token}`);
      await missing.arrayBuffer();
      const denied = await fetch(`${h.url}/auth/me`, { headers: { authorization: 'Bearer not-a-real-token' } });
      await denied.arrayBuffer();

      await waitFor(() => accessLines(h).length >= before + 3);
      const lines = accessLines(h).slice(before);
      expect(lines).toHaveLength(3);
      const [meLine, missingLine, deniedLine] = lines;
      expect(meLine).toMatchObject({ level: 30, msg: 'request', method: 'GET', route: '/auth/me', status: 200, reqId: `obs-me-${transport}`, principalId: user.id, credential: 'jwt', bytes: meBody.byteLength });
      expect(typeof meLine!['durationMs']).toBe('number');
      expect(meLine!['durationMs']).toBeGreaterThanOrEqual(0);
      expect(missingLine).toMatchObject({ method: 'GET', route: 'unmatched', status: 404, principalId: null, reqId: missing.headers.get('x-request-id') });
      expect(deniedLine).toMatchObject({ route: '/auth/me', status: 401, principalId: null });
      // The registration line carries the new user's id but neither the password nor the token.
      const everything = h.raw.join('\n');
      expect(everything).not.toContain(token);
      expect(everything).not.toContain(password);
      expect(everything).not.toContain('not-a-real-token');
    });

    it('serves Prometheus text at /metrics whose counters move with traffic', async () => {
      const first = await scrape(`${h.url}/metrics`);
      const healthBefore = sample(first, 'trellis_http_requests_total', { method: 'GET', route: '/healthz', status: '200' });
      const durationBefore = histogramCount('trellis_http_request_duration_seconds', { route: '/healthz', status: '200' });
      for (let i = 0; i < 3; i++) await (await fetch(`${h.url}/healthz`)).arrayBuffer();
      await (await fetch(`${h.url}/readyz`)).arrayBuffer();

      const second = await scrape(`${h.url}/metrics`);
      expect(sample(second, 'trellis_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(healthBefore + 3);
      expect(histogramCount('trellis_http_request_duration_seconds', { route: '/healthz', status: '200' })).toBe(durationBefore + 3);
      expect(family(second, 'trellis_http_request_duration_seconds').type).toBe('HISTOGRAM');
      expect(sample(second, 'trellis_http_response_bytes_total', { route: '/healthz', status: '200' })).toBeGreaterThan(0);
      // /readyz pings the database: the statement shows in the query histogram.
      expect(histogramCount('trellis_db_query_duration_seconds', { operation: 'select', outcome: 'ok' })).toBeGreaterThan(0);
      // The connection pool, read at scrape time: at least one connection exists once queries ran.
      const pool = family(second, 'trellis_db_pool_connections');
      expect(pool.type).toBe('GAUGE');
      expect(sample(second, 'trellis_db_pool_connections', { state: 'used' }) + sample(second, 'trellis_db_pool_connections', { state: 'free' })).toBeGreaterThan(0);
      // The process metrics are there too.
      expect(family(second, 'process_cpu_user_seconds_total').type).toBe('COUNTER');
    });

    it('counts open WebSockets per channel', async () => {
      const registered = await fetch(`${h.url}/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `obs-ws-${transport}-${Date.now()}@example.com`, password: 'correct horse battery' }),
      });
      const { token } = (await registered.json()) as { token: string };
      const open = () => scrape(`${h.url}/metrics`).then((f) => sample(f, 'trellis_websocket_connections', { channel: 'realtime.user' }));
      const before = await open();
      const probe = await WsProbe.open(`${h.url.replace(/^http/, 'ws')}/v3/wss?token=${encodeURIComponent(token)}`);
      expect(await open()).toBe(before + 1);
      probe.close();
      const until = Date.now() + 3000;
      while ((await open()) !== before && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await open()).toBe(before);
    });
  });
});

describe.each(testDatabases())('metrics configuration on $name', (db) => {
  const transport: TransportName = 'node';

  it('requires the bearer token when metrics.token is set', async () => {
    const secret = 'scrape-secret-0123456789';
    const h = await startObservedHost(db, transport, { metrics: { token: secret } });
    try {
      const none = await fetch(`${h.url}/metrics`);
      expect(none.status).toBe(401);
      expect(await none.json()).toMatchObject({ error: 'missing_credentials' });
      const wrong = await fetch(`${h.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret-wrong-000000' } });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ error: 'invalid_token' });
      await scrape(`${h.url}/metrics`, secret);
      expect(h.raw.join('\n')).not.toContain(secret);
    } finally {
      await h.close();
    }
  });

  it('moves /metrics to its own port when metrics.port is set', async () => {
    const h = await startObservedHost(db, transport, { metrics: { port: 0, token: 'separate-port-token-0001' } });
    try {
      expect((await fetch(`${h.url}/metrics`)).status).toBe(404);
      const port = h.host.metricsPort;
      expect(port).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      const families = await scrape(`http://127.0.0.1:${port}/metrics`, 'separate-port-token-0001');
      expect(family(families, 'trellis_http_requests_total').type).toBe('COUNTER');
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    } finally {
      await h.close();
    }
    expect(h.host.metricsPort).toBeGreaterThan(0);
  });

  it('keeps counters apart for two kernels in one process, and honours access-log sampling', async () => {
    const a = await startObservedHost(db, transport, { log: { access: { sampleRate: 0 } } });
    const b = await startObservedHost(db, transport, { metrics: { defaultMetrics: false } });
    try {
      for (let i = 0; i < 4; i++) await (await fetch(`${a.url}/healthz`)).arrayBuffer();
      await (await fetch(`${b.url}/healthz`)).arrayBuffer();
      expect(sample(await scrape(`${a.url}/metrics`), 'trellis_http_requests_total', { route: '/healthz' })).toBe(4);
      const fromB = await scrape(`${b.url}/metrics`);
      expect(sample(fromB, 'trellis_http_requests_total', { route: '/healthz' })).toBe(1);
      expect(fromB.find((f) => f.name === 'process_cpu_user_seconds_total')).toBeUndefined();
      expect(accessLines(a)).toHaveLength(0);
      expect(accessLines(b).length).toBeGreaterThanOrEqual(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('serves no /metrics when metrics are disabled', async () => {
    const h = await startObservedHost(db, transport, { metrics: { enabled: false }, log: { access: { enabled: false } } });
    try {
      expect((await fetch(`${h.url}/metrics`)).status).toBe(404);
      expect(accessLines(h)).toHaveLength(0);
    } finally {
      await h.close();
    }
  });
});
