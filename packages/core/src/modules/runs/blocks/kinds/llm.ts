import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../../kernel/errors.js';
import { aiGatewayServiceIdentifier, type AiGateway, type AiMessage, type AiToolCall } from '../../../../ports/ai-provider.js';
import { runsConfigServiceIdentifier } from '../../tokens.js';
import { attrIssue, optionalText } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import { renderTemplate } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';
import { noGateway } from './gateway.js';

export const LlmAttrs = Type.Object({
  model: Type.String({ minLength: 1, ...attrIssue('required', 'an LLM block needs a model id') }),
  /** The prompt's template, instead of the block's text. */
  prompt: optionalText(),
  system: optionalText(),
  temperature: Type.Optional(Type.Union([Type.Number(), Type.Null()], attrIssue('isNumber', 'must be a number'))),
  tools: Type.Optional(Type.Array(Type.String(), attrIssue('isArray', 'must be an array of AI tool ids'))),
});
export type LlmAttrs = Static<typeof LlmAttrs>;

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const errorCode = (error: unknown) => (error instanceof TrellisError ? error.code : 'tool_failed');

/**
 * LLM block: renders its prompt (attrs.prompt or its text) and optional `attrs.system`, streams
 * the model's text as `block_chunk`s, runs the tool calls the model makes (`attrs.tools`: AI tool
 * ids) with `tool_start`/`tool_result` events, and answers the model until it stops. The output
 * is the final text.
 */
export class LlmBlockExecutor implements BlockExecutor<LlmAttrs> {
  readonly kind = 'llm' as const;

  constructor(
    private readonly gateway: () => AiGateway | undefined,
    private readonly maxToolRounds: number,
  ) {}

  async execute(block: WorkflowBlock<LlmAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const gateway = this.gateway();
    if (!gateway) throw noGateway();
    const modelId = block.attrs.model;
    const toolIds = block.attrs.tools ?? [];
    const prompt = renderTemplate(block.attrs.prompt || block.text, io.ctx);
    const messages: AiMessage[] = [];
    if (block.attrs.system) messages.push({ role: 'system', content: renderTemplate(block.attrs.system, io.ctx) });
    messages.push({ role: 'user', content: prompt });
    const tools = toolIds.length ? await gateway.toolDefinitions({ userId: io.userId, toolIds }) : undefined;
    const temperature = block.attrs.temperature ?? undefined;
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

export const llmKind = defineBlockKind({
  kind: 'llm',
  nodeType: 'llmBlock',
  attrs: LlmAttrs,
  // It costs and calls out: it starts from a checkpoint and is followed by one.
  replayable: false,
  check: (attrs, text) =>
    (typeof attrs.prompt === 'string' && attrs.prompt) || text
      ? []
      : [{ field: 'prompt', constraint: 'required', message: 'an LLM block needs a prompt (attrs.prompt or its text)' }],
  executor: (services) => new LlmBlockExecutor(() => services.optional(aiGatewayServiceIdentifier), services.get(runsConfigServiceIdentifier).maxToolRounds),
});
