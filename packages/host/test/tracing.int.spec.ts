import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { installTracing, type InstalledTracing } from '@trellis/host';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';

// The SDK is installed the way the host does it when `tracing.enabled` is set, with an in-memory
// exporter in place of OTLP, so the spans the core opens through @opentelemetry/api can be read.
const exporter = new InMemorySpanExporter();
let tracing: InstalledTracing;
beforeAll(() => {
  tracing = installTracing({ serviceName: 'trellis-test', exporter });
});
afterAll(() => tracing?.shutdown());

/**
 * A GET through node:http, which the SDK does not instrument (fetch is, and would put its own
 * traceparent on the request, as it should for an outbound call).
 */
function get(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

const hex = (length: number) => Array.from({ length }, () => Math.floor(Math.random() * 16).toString(16)).join('');

describe.each(testDatabases())('tracing on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport);
    });
    afterAll(() => t?.close());

    it('continues an incoming W3C traceparent in the server span and its database spans', async () => {
      const traceId = hex(32);
      const parentId = hex(16);
      exporter.reset();
      expect(await get(`${t.url}/readyz`, { traceparent: `00-${traceId}-${parentId}-01` })).toBe(200);
      const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
      const server = spans.find((span) => span.name === 'GET /readyz');
      expect(server, `spans: ${spans.map((s) => s.name).join(', ')}`).toBeDefined();
      expect(server!.parentSpanContext?.spanId).toBe(parentId);
      expect(server!.attributes['http.route']).toBe('/readyz');
      expect(server!.attributes['http.response.status_code']).toBe(200);
      const query = spans.find((span) => span.name === 'db select');
      expect(query).toBeDefined();
      expect(query!.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
      expect(query!.attributes['db.system']).toBe(db.name === 'postgres' ? 'postgresql' : 'sqlite');
    });

    it('gives the prepared statements of a traced request client spans, children of its server span', async () => {
      const { token } = await t.register();
      // Another user's first request: its principal is read with a prepared statement (no cache yet).
      const traceId = hex(32);
      exporter.reset();
      expect(await get(`${t.url}/auth/me`, { traceparent: `00-${traceId}-${hex(16)}-01`, authorization: `Bearer ${token}` })).toBe(200);
      const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
      const server = spans.find((span) => span.name === 'GET /auth/me');
      expect(server, `spans: ${spans.map((s) => s.name).join(', ')}`).toBeDefined();
      const prepared = spans.filter((span) => span.attributes['trellis.db.statement'] !== undefined);
      expect(prepared.length, `spans: ${spans.map((s) => `${s.name} ${String(s.attributes['trellis.db.statement'] ?? '')}`).join(', ')}`).toBeGreaterThan(0);
      for (const span of prepared) {
        expect(span.name).toMatch(/^db (select|insert|update|delete)$/);
        expect(span.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
        expect(span.attributes['db.system']).toBe(db.name === 'postgres' ? 'postgresql' : 'sqlite');
        expect(span.attributes['db.operation.name']).toBe(span.name.slice(3));
      }
      // Outside a traced request (a sampled-out one) no span is started: none in its trace, and no
      // statement span without a parent. (Background jobs are traced on their own: a job's poll
      // that runs meanwhile, every pollIntervalMs, gives spans that are children of its job span.)
      exporter.reset();
      const { token: other } = await t.register();
      const sampledOut = hex(32);
      expect(await get(`${t.url}/auth/me`, { traceparent: `00-${sampledOut}-${hex(16)}-00`, authorization: `Bearer ${other}` })).toBe(200);
      const stray = exporter
        .getFinishedSpans()
        .filter((span) => span.spanContext().traceId === sampledOut || (span.attributes['trellis.db.statement'] !== undefined && span.parentSpanContext === undefined));
      expect(stray, `spans: ${stray.map((s) => `${s.name} ${String(s.attributes['trellis.db.statement'] ?? '')}`).join(', ')}`).toHaveLength(0);
    });

    it('starts a new trace when no traceparent comes in, and follows a not-sampled one', async () => {
      exporter.reset();
      await get(`${t.url}/healthz`);
      const roots = exporter.getFinishedSpans().filter((span) => span.name === 'GET /healthz');
      expect(roots).toHaveLength(1);
      expect(roots[0]!.parentSpanContext).toBeUndefined();
      exporter.reset();
      await get(`${t.url}/healthz`, { traceparent: `00-${hex(32)}-${hex(16)}-00` });
      expect(exporter.getFinishedSpans().filter((span) => span.name === 'GET /healthz')).toHaveLength(0);
    });
  });
});

describe('outbound calls', () => {
  it('sends traceparent with a fetch made inside a request span, as a child of it', async () => {
    const { createServer } = await import('node:http');
    const { context, trace } = await import('@opentelemetry/api');
    const received: Array<string | undefined> = [];
    const server = createServer((req, res) => {
      received.push(req.headers['traceparent'] as string | undefined);
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      exporter.reset();
      const traceId = hex(32);
      const parent = trace.setSpanContext(context.active(), { traceId, spanId: hex(16), traceFlags: 1, isRemote: true });
      const span = trace.getTracer('test').startSpan('work', {}, parent);
      await context.with(trace.setSpan(parent, span), async () => {
        await (await fetch(`http://127.0.0.1:${port}/`)).text();
      });
      span.end();
      expect(received).toHaveLength(1);
      const [, sentTrace, sentParent] = received[0]!.split('-');
      expect(sentTrace).toBe(traceId);
      const client = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === sentParent);
      expect(client, 'the outbound call has its own client span').toBeDefined();
      expect(client!.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
    } finally {
      server.close();
    }
  });
});
