import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../../kernel/errors.js';
import { aiGatewayServiceIdentifier, type AiGateway, type AiMessage } from '../../../../ports/ai-provider.js';
import { runModelTurn } from '../../../ai/services/model-turn.js';
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
    const temperature = block.attrs.temperature ?? undefined;
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
