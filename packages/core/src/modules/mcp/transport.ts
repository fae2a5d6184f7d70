import { Reply } from '../../kernel/http/reply.js';
import type { RequestContext } from '../../kernel/http/route.js';
import type { CompatCaller } from '../openai-compat/index.js';
import { lazyModule } from '../../kernel/lazy.js';
import { createMcpServer } from './server.js';

/** The SDK's transport is loaded by the first MCP request, not at import (as the server, see server.ts). */
const loadTransport = lazyModule(async () => (await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')).WebStandardStreamableHTTPServerTransport);

/** The scope an OAuth access token needs to use the MCP server. */
export const MCP_SCOPE = 'mcp:tools';

/** Request headers the Fetch API's `Request` sets itself. */
const skipped = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'keep-alive']);

async function* drain(body: ReadableStream<Uint8Array>, done: () => Promise<void>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) yield chunk;
  } finally {
    await done();
  }
}

/**
 * Hands one POST to the SDK's Streamable HTTP transport (its Fetch API form, so both of the
 * host's transports serve it through the dispatcher) with a server of its own, stateless, and
 * turns the `Response` back into a reply: an SSE stream as it is written, anything else whole.
 */
export async function serveMcp(ctx: RequestContext, caller: CompatCaller): Promise<Reply> {
  const WebStandardStreamableHTTPServerTransport = await loadTransport();
  const server = await createMcpServer({ em: ctx.em, get: ctx.get.bind(ctx), log: ctx.log, caller, version: '1' });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, keepAliveMs: 15_000 });
  await server.connect(transport);
  const close = async () => {
    await server.close().catch(() => undefined);
  };
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.headers)) if (!skipped.has(name)) headers.set(name, value);
  const request = new Request('http://trellis.internal/mcp', { method: 'POST', headers, body: ctx.rawBody.length ? ctx.rawBody : undefined, signal: ctx.signal });
  const response = await transport.handleRequest(request);
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'content-type' && name !== 'content-length') out[name] = value;
  });
  const type = response.headers.get('content-type') ?? '';
  if (response.body && type.startsWith('text/event-stream') && response.status === 200) {
    return Reply.stream(drain(response.body, close), type, { ...out, 'x-accel-buffering': 'no' });
  }
  const text = await response.text();
  await close();
  return text ? Reply.raw(text, type || 'application/json', response.status, out) : Reply.empty(response.status, out);
}
