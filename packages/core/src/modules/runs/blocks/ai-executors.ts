import { TrellisError } from '../../../kernel/errors.js';
import type { AiGateway, AiMessage } from '../../../ports/ai-provider.js';
import { runModelTurn } from '../../ai/services/model-turn.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from './executor.js';
import { renderDeep, renderTemplate } from './template.js';
import type { WorkflowBlock } from './workflow.js';

const noGateway = () =>
  new TrellisError('unavailable', 'ai_gateway_not_configured', 'No AI gateway is bound in this deployment (the ai module), so LLM and tool blocks cannot run.');

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
    const temperature = typeof block.attrs.temperature === 'number' ? block.attrs.temperature : undefined;
    // The run holds the credits of the whole run: the model turn reports each call's usage to it.
    const outcome = await runModelTurn({
      gateway,
      userId: io.userId,
      modelId,
      messages,
      toolIds,
      temperature,
      signal: io.signal,
      threadId: io.runId,
      maxSteps: this.maxToolRounds,
      runTools: true,
      sink: {
        // The log behind: the stream is not read further until it caught up.
        text: (delta) => io.chunk(delta),
        stepEnd: (step) => io.modelUsage(modelId, step.usage),
        toolStart: (call) => io.toolStart(call.toolCallId, call.toolName),
        toolResult: (call, result) => io.toolResult(call.toolCallId, result),
      },
    });
    if (outcome.status === 'completed') return { output: outcome.text };
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
