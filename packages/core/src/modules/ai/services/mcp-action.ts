import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonSchemaObject } from '../../../ports/ai-provider.js';
import { refusalOf, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { toolCallFailed, toolDestinationRefused } from './http-action.js';
import { TrellisError } from '../../../kernel/errors.js';
import { lazyModule } from '../../../kernel/lazy.js';

/** The MCP SDK's client is loaded by the first `mcp` tool action, not at import. */
const loadMcpClientSdk = lazyModule(async () => {
  const [{ Client }, { StreamableHTTPClientTransport, StreamableHTTPError }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return { Client, StreamableHTTPClientTransport, StreamableHTTPError };
});

export interface McpActionConf {
  url: string;
  tool: string;
  headers: Record<string, string>;
  timeoutMs?: number;
}

export interface McpCallOptions {
  /** The server's network guard: the SDK's transport fetches through it, so every connection is checked. */
  guard: NetworkGuard;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Sent in the call's `_meta` as `idempotencyKey` (the same on every attempt of a run's call). */
  idempotencyKey?: string;
}

/** One MCP session over Streamable HTTP for the length of `work`, closed afterwards. */
async function withClient<T>(conf: McpActionConf, options: McpCallOptions, work: (client: Client, requestOptions: { signal: AbortSignal; timeout: number }) => Promise<T>): Promise<T> {
  const { Client, StreamableHTTPClientTransport, StreamableHTTPError } = await loadMcpClientSdk();
  const url = new URL(conf.url);
  const timeout = Math.min(conf.timeoutMs ?? options.timeoutMs, options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(timeout)]) : AbortSignal.timeout(timeout);
  const client = new Client({ name: 'trellis', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: conf.headers, redirect: 'manual' }, fetch: options.guard.fetch });
  try {
    await client.connect(transport, { signal, timeout });
    return await work(client, { signal, timeout });
  } catch (error) {
    const refused = refusalOf(error);
    if (refused) throw toolDestinationRefused(refused);
    if (error instanceof TrellisError) throw error;
    if (options.signal?.aborted) throw options.signal.reason ?? error;
    throw toolCallFailed(`The MCP server at ${url.origin} failed: ${describeFailure(error, StreamableHTTPError)}`, error);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The input schema and description the MCP server declares for the action's tool. */
export async function describeMcpTool(conf: McpActionConf, options: McpCallOptions): Promise<{ description: string; parameters: JsonSchemaObject }> {
  return withClient(conf, options, async (client, requestOptions) => {
    const { tools } = await client.listTools(undefined, requestOptions);
    const tool = tools.find((t) => t.name === conf.tool);
    if (!tool) throw toolCallFailed(`The MCP server offers no tool named "${conf.tool}".`);
    return { description: tool.description ?? tool.title ?? conf.tool, parameters: tool.inputSchema as JsonSchemaObject };
  });
}

/**
 * Calls the action's tool. The result is the tool's `structuredContent` when it returns one, else
 * the text of its text content parts joined by newlines (other parts as they are). A result with
 * `isError` fails with `tool_call_failed` carrying the tool's text.
 */
export async function runMcpAction(conf: McpActionConf, args: unknown, options: McpCallOptions): Promise<unknown> {
  return withClient(conf, options, async (client, requestOptions) => {
    const params = { name: conf.tool, arguments: (args ?? {}) as Record<string, unknown>, ...(options.idempotencyKey ? { _meta: { idempotencyKey: options.idempotencyKey } } : {}) };
    const result = await client.callTool(params, undefined, requestOptions);
    const content = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: string }>) : [];
    const texts = content.filter((c) => c.type === 'text').map((c) => c.text ?? '');
    if (result.isError) throw toolCallFailed(`The MCP tool "${conf.tool}" reported an error: ${texts.join('\n').slice(0, 500)}`);
    if (result.structuredContent !== undefined) return result.structuredContent;
    if (texts.length === content.length) return texts.join('\n');
    return content;
  });
}

/** A failure in words of our own: an HTTP status is named, the body the server sent is not repeated. */
function describeFailure(error: unknown, httpError: typeof StreamableHTTPError): string {
  if (error instanceof httpError) return error.code ? `it answered HTTP ${error.code}` : 'its answer could not be read';
  const code = (error as { cause?: { code?: string } })?.cause?.code;
  if (code) return `it cannot be reached (${code})`;
  return error instanceof Error ? error.message.slice(0, 300) : 'unknown error';
}
