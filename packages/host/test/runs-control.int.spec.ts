import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually } from './documents.fixtures.js';
import { sharedDatabase, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson } from './support/run-clients.js';

/**
 * Durability of control flow: a worker lost inside a loop leaves the iterations it completed in
 * the run's checkpoint; the next attempt runs only the rest (calls counted on a local HTTP server
 * a tool block calls).
 */

/** Answers POST bodies back, counting calls per `item`; while `hang` names an item, its calls never answer. */
function itemServer(): Promise<{ url: string; calls: Map<string, number>; answered: () => number; hang: { item: string | null }; server: Server }> {
  const calls = new Map<string, number>();
  const hang = { item: null as string | null };
  let answered = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { item?: string };
      const item = String(body.item);
      calls.set(item, (calls.get(item) ?? 0) + 1);
      if (hang.item === item) return;
      answered++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ done: item }));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, answered: () => answered, hang, server })),
  );
}

const httpTool = {
  name: 'Items',
  desc: 'POSTs body to url',
  actions: [{ name: 'call', type: 'http', conf: { method: 'POST', url: '{{url}}', body: '{{body}}', parameters: { type: 'object', properties: { url: { type: 'string' }, body: { type: 'object' } } } } }],
};

describe.each(testDatabases())('control flow across a lost worker on $name', (base) => {
  const db = sharedDatabase(base);
  let server: Awaited<ReturnType<typeof itemServer>>;
  afterAll(async () => {
    await new Promise((resolve) => server?.server.close(resolve));
    await db.cleanup();
  });

  it('a loop interrupted mid-way continues in the next host without running completed iterations again', async () => {
    server = await itemServer();
    server.hang.item = 'd';
    const config = { network: { allowPrivateNetworks: ['127.0.0.1'] } };
    const first: TestHost = await startTestHost(db, 'node', { config: { ...config, runs: { shutdownGraceMs: 0 } } as never });
    const owner = await actor(first);
    const tool = await first.request('POST', '/ai/tools', { token: owner.token, body: httpTool });
    expect(tool.status, tool.text).toBe(201);
    const items = ['a', 'b', 'c', 'd', 'e', 'f'];
    const loop = {
      type: 'loopBlock',
      attrs: { id: 'each', name: 'each', items: 'things', concurrency: 2 },
      content: [wf.tool('call', tool.body.id, 'call', { url: '{{ toolUrl }}/item', body: { item: '{{ item }}' } })],
    };
    const { documentId } = await workflowDocument(first, owner.token, wf.doc(wf.input('toolUrl'), wf.input('things', { type: 'array' }), loop));
    const started = await readNdjson(`${first.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson', inputs: { toolUrl: server.url, things: items } }, stopAfter: 1 });
    const runId = started.events[0]!.data.runId as string;
    // Every item but d answered, and the checkpoint after the last of them is stored.
    await eventually(
      () => first.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }),
      (r) => r.body.sessions?.filter((s: { blockId: string; status: string }) => s.blockId === 'tool-call' && s.status === 'completed').length === 5,
    );
    expect(server.answered()).toBe(5);
    await first.close();

    server.hang.item = null;
    const second = await startTestHost(db, 'uws', { config: { ...config, runs: { staleAfterSeconds: 3, reaperIntervalMs: 200 } } as never });
    try {
      const record = await eventually(
        () => second.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }),
        (r) => r.body.status === 'completed' || r.body.status === 'failed',
        'the run to end',
      );
      expect(record.body).toMatchObject({ status: 'completed', attempts: 2, output: items.map((item) => ({ done: item })) });
      // Only the interrupted iteration ran again.
      expect(Object.fromEntries(server.calls)).toEqual({ a: 1, b: 1, c: 1, d: 2, e: 1, f: 1 });
      const sessions = record.body.sessions.filter((s: { blockId: string }) => s.blockId === 'tool-call');
      expect(sessions.map((s: { path: string; iteration: number }) => [s.path, s.iteration]).sort()).toEqual(items.map((_, i) => [`each[${i}]`, i]));
      expect(sessions.every((s: { status: string; value?: unknown }) => s.status === 'completed' && s.value === undefined)).toBe(true);
    } finally {
      await second.close();
    }
  });
});
