import type { EntityManager } from '@mikro-orm/core';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { isTrellisError } from '../../kernel/errors.js';
import { lazyModule } from '../../kernel/lazy.js';
import { startDeploymentRun, type CompatCaller } from '../openai-compat/index.js';
import { offeredTools } from './tools.js';

type Get = <T>(id: new (...args: any[]) => T) => T;

export interface McpServerContext {
  em: EntityManager;
  get: Get;
  log: Logger;
  caller: CompatCaller;
  version: string;
}

/** The MCP SDK (with zod and its schemas) is loaded by the first MCP request, not at import. */
const loadSdk = lazyModule(async () => {
  const [{ Server }, { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }] = await Promise.all([import('@modelcontextprotocol/sdk/server/index.js'), import('@modelcontextprotocol/sdk/types.js')]);
  return { Server, CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError };
});

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

/**
 * The MCP server of one request (the transport is stateless: every POST builds one): `tools/list`
 * offers the deployed blocks that opted in, `tools/call` runs one. Chunks the run streams become
 * `notifications/progress` when the call carries a progress token; the result is the run's output.
 * A failed or refused run is a tool result with `isError` (the model reads why), not a protocol error.
 */
export async function createMcpServer(ctx: McpServerContext): Promise<Server> {
  const { Server, CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } = await loadSdk();
  const server = new Server({ name: 'trellis', version: ctx.version }, { capabilities: { tools: { listChanged: false } }, instructions: 'Each tool runs a deployed Trellis block with the arguments as its inputs.' });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await offeredTools(ctx.em, ctx.get, ctx.caller);
    return { tools: tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema })) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = (await offeredTools(ctx.em, ctx.get, ctx.caller)).find((t) => t.name === request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `No tool named ${request.params.name}.`);
    const progressToken = extra._meta?.progressToken;
    let runId: string | undefined;
    try {
      const started = await startDeploymentRun(ctx.em, ctx.get, ctx.caller, 'mcp', tool.blockId, () => request.params.arguments ?? {});
      runId = started.runId;
      let progress = 0;
      for await (const event of started.events(0, extra.signal)) {
        if (event.type === 'block_chunk' && progressToken !== undefined && typeof event.data.delta === 'string') {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message: event.data.delta } });
        }
        if (event.type === 'run_complete' || event.type === 'run_waiting' || event.type === 'run_error') break;
      }
      const result = await started.result();
      const meta = { _meta: { 'trellis/runId': result.runId, 'trellis/status': result.status } };
      if (result.error) return { content: [{ type: 'text', text: `The run failed: ${result.error.message} (${result.error.code})` }], isError: true, ...meta };
      if (result.status === 'waiting' && result.waiting) return { content: [{ type: 'text', text: `The run waits for an answer: ${result.waiting.question}` }], ...meta };
      return { content: [{ type: 'text', text: text(result.output) }], ...meta };
    } catch (error) {
      if (!isTrellisError(error) || !error.exposed) {
        ctx.log.error({ err: error, runId }, 'MCP tool call failed');
        return { content: [{ type: 'text', text: 'The tool failed.' }], isError: true };
      }
      const details = error.details?.length ? ` ${error.details.map((d) => `${d.field}: ${d.message}`).join('; ')}` : '';
      return { content: [{ type: 'text', text: `${error.message}${details} (${error.code})` }], isError: true };
    }
  });
  return server;
}
