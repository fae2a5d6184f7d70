import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AiToolService } from '../src/modules/ai/services/ai-tool.service.js';
import type { AiConfig } from '../src/modules/ai/ai.config.js';
import type { AiTool } from '../src/modules/ai/entities/ai-tool.entity.js';
import { UuidV7Ids } from '../src/ports/ids.js';
import { NetworkGuard } from '../src/kernel/net/network-guard.js';
import { loopbackHostForms, runRebinding } from '@trellis/test-support';
import { SecretBox } from '../src/modules/ai/services/secret-box.js';

const box = new SecretBox('k1', new Map([['k1', Buffer.alloc(32, 1)]]));

/** A real MCP server (the SDK's server side, stateless Streamable HTTP) with two tools. */
function mcpServer(): Server {
  const server = new Server({ name: 'test-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: 'add', description: 'Adds two numbers', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
      { name: 'shout', description: 'Upper-cases text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
      { name: 'fail', description: 'Always fails', inputSchema: { type: 'object', properties: {} } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (request.params.name === 'add') {
      const sum = Number(args.a) + Number(args.b);
      return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
    }
    if (request.params.name === 'shout') return { content: [{ type: 'text', text: String(args.text).toUpperCase() }] };
    return { content: [{ type: 'text', text: 'it broke' }], isError: true };
  });
  return server;
}

const config = { tools: { timeoutMs: 10_000, maxResponseBytes: 1_000_000 }, toolAutoMaxSteps: 4 } as unknown as AiConfig;
const guards: NetworkGuard[] = [];
const service = (allowPrivateNetworks: boolean | string[] | NetworkGuard) => {
  const guard = allowPrivateNetworks instanceof NetworkGuard ? allowPrivateNetworks : new NetworkGuard({ allowPrivateNetworks });
  guards.push(guard);
  return new AiToolService(new UuidV7Ids(), config, guard, box);
};

const tool = (url: string, actions: AiTool['actions']) => ({ id: 'x', name: 'Calc', desc: 'Calculator', actions }) as unknown as AiTool;

describe('mcp tool actions against a real MCP server (Streamable HTTP)', () => {
  let http: HttpServer;
  let url: string;
  let calls = 0;

  beforeAll(async () => {
    http = createServer(async (req, res) => {
      calls++;
      if (req.url === '/broken') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal detail: postgres://admin:hunter2@db.internal/prod');
        return;
      }
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => void transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await Promise.all(guards.map((guard) => guard.close()));
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });

  it('offers the server-declared input schema as the function definition', async () => {
    const defs = await service(['127.0.0.1']).definitions([tool(url, [{ name: 'sum', type: 'mcp', conf: { url, tool: 'add' } }])]);
    expect(defs).toEqual([{ name: 'Calc__sum', description: 'Adds two numbers', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } }]);
  });

  it('calls tools: structured content, text content, and errors as tool_call_failed', async () => {
    const tools = service(['127.0.0.1']);
    const calc = tool(url, [
      { name: 'sum', type: 'mcp', conf: { url, tool: 'add' } },
      { name: 'loud', type: 'mcp', conf: { url, tool: 'shout' } },
      { name: 'bad', type: 'mcp', conf: { url, tool: 'fail' } },
    ]);
    const before = calls;
    expect(await tools.call([calc], 'Calc__sum', { a: 2, b: 40 })).toEqual({ sum: 42 });
    expect(await tools.call([calc], 'Calc__loud', { text: 'hi' })).toBe('HI');
    expect(calls).toBeGreaterThan(before);
    await expect(tools.call([calc], 'Calc__bad', {})).rejects.toMatchObject({ code: 'tool_call_failed', status: 502, message: expect.stringContaining('it broke') });
  });

  it('names the HTTP status of a failing MCP server without repeating its body', async () => {
    const broken = url.replace('/mcp', '/broken');
    const error = await service(['127.0.0.1'])
      .call([tool(broken, [{ name: 'sum', type: 'mcp', conf: { url: broken, tool: 'add' } }])], 'Calc__sum', { a: 1, b: 1 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'tool_call_failed', status: 502, message: expect.stringContaining('HTTP 500') });
    expect((error as Error).message).not.toContain('hunter2');
  });

  it.each(loopbackHostForms)('refuses an MCP server at the loopback written %s, before connecting', async (host) => {
    const target = url.replace('127.0.0.1', host);
    const before = calls;
    await expect(service(false).call([tool(target, [{ name: 'sum', type: 'mcp', conf: { url: target, tool: 'add' } }])], 'Calc__sum', { a: 1, b: 1 })).rejects.toMatchObject({ code: 'tool_destination_refused', status: 400 });
    expect(calls).toBe(before);
  });

  it('holds when the MCP server name flips between an allowed and a refused address (DNS rebinding)', async () => {
    const port = Number(new URL(url).port);
    const outcome = await runRebinding(
      port,
      async (guard, origin) => {
        const target = `${origin}/mcp`;
        expect(await service(guard).call([tool(target, [{ name: 'sum', type: 'mcp', conf: { url: target, tool: 'add' } }])], 'Calc__sum', { a: 2, b: 3 })).toEqual({ sum: 5 });
      },
      { rounds: 12, period: 3, isRefusal: (e) => (e as { code?: string }).code === 'tool_destination_refused' },
    );
    expect(outcome.other).toEqual([]);
    expect(outcome.trapHits).toBe(0);
    expect(outcome.succeeded).toBeGreaterThan(0);
    expect(outcome.refused).toBeGreaterThan(0);
  });
});
