import { Type, type Static } from '@sinclair/typebox';
import { aiGatewayServiceIdentifier, type AiGateway } from '../../../../ports/ai-provider.js';
import { attrIssue } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import { renderDeep, renderTemplate } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';
import { noGateway } from './gateway.js';
import { blockToolCallKey } from '../../services/tool-effects.js';

export const ToolAttrs = Type.Object({
  tool: Type.String({ minLength: 1, ...attrIssue('required', 'a tool block needs an AI tool id') }),
  action: Type.String({ minLength: 1, ...attrIssue('required', 'a tool block needs the action (function) name') }),
  /** The action's arguments; strings inside are templates. */
  args: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type ToolAttrs = Static<typeof ToolAttrs>;

/**
 * Tool block: calls one action (`attrs.action`) of an AI tool (`attrs.tool`) with `attrs.args`
 * (strings inside are templates), emitting `tool_start` and `tool_result`. The output is the result.
 */
export class ToolBlockExecutor implements BlockExecutor<ToolAttrs> {
  readonly kind = 'tool' as const;

  constructor(private readonly gateway: () => AiGateway | undefined) {}

  async execute(block: WorkflowBlock<ToolAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const gateway = this.gateway();
    if (!gateway) throw noGateway();
    const toolName = block.attrs.action;
    const toolCallId = `${block.id}:${toolName}`;
    const args = renderDeep(block.attrs.args ?? {}, io.ctx);
    // The same key on every attempt; a result an earlier attempt recorded answers without calling again.
    const idempotencyKey = blockToolCallKey(io, block.id, 0);
    await io.toolStart(toolCallId, toolName);
    const recorded = await io.recall(idempotencyKey);
    const result = recorded ? recorded.result : await gateway.callTool({ userId: io.userId, toolIds: [renderTemplate(block.attrs.tool, io.ctx)], toolName, args, signal: io.signal, idempotencyKey, toolCallId });
    await io.toolResult(toolCallId, result, idempotencyKey);
    return { output: result ?? null };
  }
}

export const toolKind = defineBlockKind({
  kind: 'tool',
  nodeType: 'toolBlock',
  attrs: ToolAttrs,
  // It calls out of the run: never run twice by a continuation.
  replayable: false,
  executor: (services) => new ToolBlockExecutor(() => services.optional(aiGatewayServiceIdentifier)),
});
