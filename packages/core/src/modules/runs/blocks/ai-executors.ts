import { TrellisError } from '../../../kernel/errors.js';
import type { AiGateway, AiMessage, AiToolCall } from '../../../ports/ai-provider.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from './executor.js';
import { renderDeep, renderTemplate } from './template.js';
import type { WorkflowBlock } from './workflow.js';

const noGateway = () =>
  new TrellisError('unavailable', 'ai_gateway_not_configured', 'No AI gateway is bound in this deployment (the ai module), so LLM and tool blocks cannot run.');

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const errorCode = (error: unknown) => (error instanceof TrellisError ? error.code : 'tool_failed');

/**
 * LLM block: renders its prompt (attrs.prompt or its text) and optional `attrs.system`, streams
 * the model's text as `block_chunk`s, runs the tool calls the model makes (`attrs.tools`: AI tool
 * ids) with `tool_start`/`tool_result` events, and answers the model until it stops. The output
 * is the final text.
 */
export class LlmBlockExecutor implements BlockExecutor {
  readonly kind = 'llm' as const;

  constructor(
    private readonly gateway: () => AiGateway | undefined,
    private readonly maxToolRounds: number,
  ) {}

  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    const gateway = this.gateway();
    if (!gateway) throw noGateway();
    const modelId = block.attrs.model as string;
    const toolIds = (block.attrs.tools as string[] | undefined) ?? [];
    const prompt = renderTemplate(typeof block.attrs.prompt === 'string' && block.attrs.prompt ? block.attrs.prompt : block.text, io.ctx);
    const messages: AiMessage[] = [];
    if (typeof block.attrs.system === 'string' && block.attrs.system) messages.push({ role: 'system', content: renderTemplate(block.attrs.system, io.ctx) });
    messages.push({ role: 'user', content: prompt });
    const tools = toolIds.length ? await gateway.toolDefinitions({ userId: io.userId, toolIds }) : undefined;
    const temperature = typeof block.attrs.temperature === 'number' ? block.attrs.temperature : undefined;
    let text = '';
    for (let round = 0; round < this.maxToolRounds; round++) {
      text = '';
      const calls: AiToolCall[] = [];
      for await (const part of gateway.chat({ userId: io.userId, modelId, request: { messages, tools, temperature, signal: io.signal, threadId: io.runId } })) {
        if (part.type === 'text-delta') {
          text += part.delta;
          // The log behind: the stream is not read further until it caught up.
          const behind = io.chunk(part.delta);
          if (behind) await behind;
        } else if (part.type === 'tool-call') {
          calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
        } else if (part.type === 'finish') {
          io.modelUsage(modelId, part.usage);
        }
      }
      if (!calls.length) return { output: text };
      messages.push({ role: 'assistant', content: text, toolCalls: calls });
      for (const call of calls) {
        await io.toolStart(call.toolCallId, call.toolName);
        let result: unknown;
        try {
          result = await gateway.callTool({ userId: io.userId, toolIds, toolName: call.toolName, args: call.input, signal: io.signal });
        } catch (error) {
          if (io.signal.aborted) throw error;
          result = { error: errorCode(error), message: errorText(error) };
        }
        await io.toolResult(call.toolCallId, result);
        messages.push({ role: 'tool', toolCallId: call.toolCallId, toolName: call.toolName, content: JSON.stringify(result ?? null) });
      }
    }
    throw new TrellisError('bad_request', 'too_many_tool_rounds', `The model kept calling tools after ${this.maxToolRounds} turns.`);
  }
}

/**
 * Tool block: calls one action (`attrs.action`) of an AI tool (`attrs.tool`) with `attrs.args`
 * (strings inside are templates), emitting `tool_start` and `tool_result`. The output is the result.
 */
export class ToolBlockExecutor implements BlockExecutor {
  readonly kind = 'tool' as const;

  constructor(private readonly gateway: () => AiGateway | undefined) {}

  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    const gateway = this.gateway();
    if (!gateway) throw noGateway();
    const toolName = block.attrs.action as string;
    const toolCallId = `${block.id}:${toolName}`;
    const args = renderDeep(block.attrs.args ?? {}, io.ctx);
    await io.toolStart(toolCallId, toolName);
    const result = await gateway.callTool({ userId: io.userId, toolIds: [block.attrs.tool as string], toolName, args, signal: io.signal });
    await io.toolResult(toolCallId, result);
    return { output: result ?? null };
  }
}
