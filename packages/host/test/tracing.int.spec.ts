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
      const response = await t.request('GET', '/readyz', { headers: { traceparent: `00-${traceId}-${parentId}-01` } });
      expect(response.status).toBe(200);
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

    it('starts a new trace when no traceparent comes in, and follows a not-sampled one', async () => {
      exporter.reset();
      await t.request('GET', '/healthz');
      const roots = exporter.getFinishedSpans().filter((span) => span.name === 'GET /healthz');
      expect(roots).toHaveLength(1);
      expect(roots[0]!.parentSpanContext).toBeUndefined();
      exporter.reset();
      await t.request('GET', '/healthz', { headers: { traceparent: `00-${hex(32)}-${hex(16)}-00` } });
      expect(exporter.getFinishedSpans().filter((span) => span.name === 'GET /healthz')).toHaveLength(0);
    });
  });
});
