import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkGuard } from '../../../kernel/net/network-guard.js';
import { blockToolCallKey, toolCallIdempotencyKey } from '../../runs/index.js';
import { runHttpAction } from './http-action.js';
import { runMcpAction } from './mcp-action.js';

const guard = new NetworkGuard({ allowPrivateNetworks: ['127.0.0.1'] });

describe('tool call idempotency keys', () => {
  it('are derived from the run, the block path, the iteration and the call index alone', () => {
    const place = { runId: '0193b0c2-0000-7000-8000-000000000001', path: 'llm-a', iteration: 0, callIndex: 0 };
    const key = toolCallIdempotencyKey(place);
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(toolCallIdempotencyKey({ ...place })).toBe(key);
    const others = [{ runId: '0193b0c2-0000-7000-8000-000000000002' }, { path: 'llm-b' }, { iteration: 1 }, { callIndex: 1 }].map((change) => toolCallIdempotencyKey({ ...place, ...change }));
    expect(new Set([key, ...others]).size).toBe(5);
    // A top-level block's path is its id, and the iteration 0.
    expect(blockToolCallKey({ runId: place.runId }, 'llm-a', 0)).toBe(key);
    expect(blockToolCallKey({ runId: place.runId, path: 'loop/llm-a', iteration: 2 }, 'llm-a', 0)).toBe(toolCallIdempotencyKey({ ...place, path: 'loop/llm-a', iteration: 2 }));
  });
});

describe('idempotency keys on the wire', () => {
  let server: Server;
  let url: string;
  const seen: Array<{ header?: string; meta?: unknown }> = [];
  beforeAll(async () => {
    server = createServer(async (req, res) => {
      if (req.url?.startsWith('/http')) {
        seen.push({ header: req.headers['idempotency-key'] as string | undefined });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        return;
      }
      // A stateless MCP server (one per request) with one tool that reports the call's _meta.
      const mcp = new McpServer({ name: 'meta-echo', version: '1.0.0' });
      mcp.registerTool('charge', { description: 'Charges once.' }, async (extra) => {
        seen.push({ meta: extra._meta });
        return { content: [{ type: 'text', text: 'charged' }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('an http action sends Idempotency-Key, unless its headers set one', async () => {
    seen.length = 0;
    const options = { guard, timeoutMs: 5000, maxResponseBytes: 10_000 };
    await runHttpAction({ method: 'POST', url: `${url}/http`, headers: {} }, {}, { ...options, idempotencyKey: 'key-1' });
    await runHttpAction({ method: 'POST', url: `${url}/http`, headers: { 'Idempotency-Key': 'own' } }, {}, { ...options, idempotencyKey: 'key-2' });
    await runHttpAction({ method: 'GET', url: `${url}/http`, headers: {} }, {}, options);
    expect(seen.map((s) => s.header)).toEqual(['key-1', 'own', undefined]);
  });

  it('an MCP call sends it in _meta.idempotencyKey', async () => {
    seen.length = 0;
    const result = await runMcpAction({ url: `${url}/mcp`, tool: 'charge', headers: {} }, {}, { guard, timeoutMs: 5000, idempotencyKey: 'key-mcp' });
    expect(result).toBe('charged');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.meta).toMatchObject({ idempotencyKey: 'key-mcp' });
  });
});
