import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../../kernel/errors.js';
import { aiGatewayServiceIdentifier, type AiGateway, type AiMessage } from '../../../../ports/ai-provider.js';
import { modelCallFrame, runModelTurn } from '../../../ai/index.js';
import { runsConfigServiceIdentifier } from '../../tokens.js';
import { attrIssue, optionalText } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import { renderTemplate } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';
import { noGateway } from './gateway.js';
import { blockToolCallKey } from '../../services/tool-effects.js';
import { DEFAULT_MAX_REPAIRS, outputSchemaIssues, outputValidator, readStructured, repairRequest, schemaInstruction, structuredOutputInvalid } from './structured-output.js';

export const LlmAttrs = Type.Object({
  model: Type.String({ minLength: 1, ...attrIssue('required', 'an LLM block needs a model id') }),
  /** The prompt's template, instead of the block's text. */
  prompt: optionalText(),
  system: optionalText(),
  temperature: Type.Optional(Type.Union([Type.Number(), Type.Null()], attrIssue('isNumber', 'must be a number'))),
  tools: Type.Optional(Type.Array(Type.String(), attrIssue('isArray', 'must be an array of AI tool ids'))),
  /** Structured output: a JSON Schema the answer must match; the parsed value is the output. */
  outputSchema: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], attrIssue('isObject', 'must be a JSON Schema object'))),
  /** Tries after the first answer when it does not match `outputSchema` (default 2). */
  maxRepairs: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, ...attrIssue('isIn', 'must be a whole number from 0 to 5') })),
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
    // A template: `{{ modelId }}` takes the model from an input.
    const modelId = renderTemplate(block.attrs.model, io.ctx).trim();
    const toolIds = block.attrs.tools ?? [];
    const prompt = renderTemplate(block.attrs.prompt || block.text, io.ctx);
    const messages: AiMessage[] = [];
    if (block.attrs.system) messages.push({ role: 'system', content: renderTemplate(block.attrs.system, io.ctx) });
    messages.push({ role: 'user', content: prompt });
    const temperature = block.attrs.temperature ?? undefined;
    const schema = block.attrs.outputSchema ?? undefined;
    if (schema) messages.unshift({ role: 'system', content: schemaInstruction(schema) });
    // Tool calls are numbered over the whole block (every try): their idempotency keys never repeat.
    let callIndex = 0;
    const turn = async () => {
      const first = callIndex;
      // The run holds the credits of the whole run: the model turn reports each call's usage to it.
      // Its calls are recorded as this block's (in the run's scope: see docs/observability.md).
      const outcome = await runModelTurn({
        scope: io.modelCalls && modelCallFrame({ blockPath: io.path ?? block.id }, io.modelCalls),
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
        responseFormat: schema ? { type: 'json', schema, name: 'output' } : undefined,
        effects: { key: (index) => blockToolCallKey(io, block.id, first + index), recall: (key) => io.recall(key) },
        sink: {
          // Every call of the turn (tool rounds, and each try of structured output) is checked against the run's budgets first.
          stepStart: io.beforeModelCall && (() => io.beforeModelCall!(modelId)),
          // The log behind: the stream is not read further until it caught up.
          text: (delta) => io.chunk(delta),
          stepEnd: (step) => io.modelUsage(modelId, step.usage),
          toolStart: (call) => io.toolStart(call.toolCallId, call.toolName),
          toolResult: (call, result, _failed, key) => io.toolResult(call.toolCallId, result, key),
        },
      });
      callIndex += outcome.steps.reduce((sum, step) => sum + step.calls.length, 0);
      if (outcome.status !== 'completed') throw new TrellisError('bad_request', 'too_many_tool_rounds', `The model kept calling tools after ${this.maxToolRounds} turns.`);
      return outcome.text;
    };
    if (!schema) return { output: await turn() };
    return { output: await this.structured(schema, block.attrs.maxRepairs ?? DEFAULT_MAX_REPAIRS, messages, turn) };
  }

  /** Asks until the answer matches `schema` (at most `maxRepairs` more tries, each told what was wrong); the parsed value. */
  private async structured(schema: Record<string, unknown>, maxRepairs: number, messages: AiMessage[], turn: () => Promise<string>): Promise<unknown> {
    const validate = outputValidator(schema);
    for (let tries = 1; ; tries++) {
      const text = await turn();
      const read = readStructured(text, validate);
      if (read.ok) return read.value;
      if (tries > maxRepairs) throw structuredOutputInvalid(tries, read.errors);
      messages.push({ role: 'assistant', content: text }, repairRequest(read.errors));
    }
  }
}

export const llmKind = defineBlockKind({
  kind: 'llm',
  nodeType: 'llmBlock',
  attrs: LlmAttrs,
  // It costs and calls out: it starts from a checkpoint and is followed by one.
  replayable: false,
  check: (attrs, text) => [
    ...((typeof attrs.prompt === 'string' && attrs.prompt) || text ? [] : [{ field: 'prompt', constraint: 'required', message: 'an LLM block needs a prompt (attrs.prompt or its text)' }]),
    ...outputSchemaIssues(attrs.outputSchema),
  ],
  executor: (services) => new LlmBlockExecutor(() => services.optional(aiGatewayServiceIdentifier), services.get(runsConfigServiceIdentifier).maxToolRounds),
});
