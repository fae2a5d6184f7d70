import { Type, type Static } from '@sinclair/typebox';
import { optionalText } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import { renderTemplate } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';

export const AskAttrs = Type.Object({
  /** The question's template, instead of the block's text. */
  question: optionalText(),
});
export type AskAttrs = Static<typeof AskAttrs>;

/** Ask block: the run waits for a person's answer to the rendered question. */
export class AskBlockExecutor implements BlockExecutor<AskAttrs> {
  readonly kind = 'ask' as const;
  async execute(block: WorkflowBlock<AskAttrs>, io: BlockIo): Promise<BlockOutcome> {
    return { wait: { question: renderTemplate(block.attrs.question || block.text, io.ctx) } };
  }
}

export const askKind = defineBlockKind({
  kind: 'ask',
  nodeType: 'askBlock',
  attrs: AskAttrs,
  // It waits for a person: a continuation starts after it, from the checkpoint before it.
  replayable: false,
  check: (attrs, text) =>
    (typeof attrs.question === 'string' && attrs.question) || text
      ? []
      : [{ field: 'question', constraint: 'required', message: 'an ask block needs a question (attrs.question or its text)' }],
  executor: () => new AskBlockExecutor(),
});
