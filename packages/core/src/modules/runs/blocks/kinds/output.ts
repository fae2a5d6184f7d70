import { Type, type Static } from '@sinclair/typebox';
import { optionalText } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import { renderValue } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';

export const OutputAttrs = Type.Object({
  /** The template, instead of the block's text. */
  value: optionalText(),
});
export type OutputAttrs = Static<typeof OutputAttrs>;

/** Output block: its text (or `attrs.value`) rendered; one `{{ reference }}` alone keeps the value's JSON type. */
export class OutputBlockExecutor implements BlockExecutor<OutputAttrs> {
  readonly kind = 'output' as const;
  async execute(block: WorkflowBlock<OutputAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const template = typeof block.attrs.value === 'string' ? block.attrs.value : block.text;
    return { output: renderValue(template, io.ctx) };
  }
}

export const outputKind = defineBlockKind({
  kind: 'output',
  nodeType: 'outputBlock',
  attrs: OutputAttrs,
  replayable: true,
  executor: () => new OutputBlockExecutor(),
});
