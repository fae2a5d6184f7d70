import { Type, type Static } from '@sinclair/typebox';
import { attrIssue, optionalText } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import type { WorkflowBlock } from '../workflow.js';

export const inputTypes = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
export type InputType = (typeof inputTypes)[number];

/** The spec's Input Block schema. */
export const InputAttrs = Type.Object({
  name: Type.String({ minLength: 1, ...attrIssue('required', 'an input block needs a name') }),
  type: Type.Optional(Type.Union(inputTypes.map((t) => Type.Literal(t)), attrIssue('isIn', `must be one of ${inputTypes.join(', ')}`))),
  required: Type.Optional(Type.Boolean()),
  default: Type.Optional(Type.Unknown()),
  description: optionalText(),
});
export type InputAttrs = Static<typeof InputAttrs>;

/** Input block: its output is the validated input value (or its default). */
export class InputBlockExecutor implements BlockExecutor<InputAttrs> {
  readonly kind = 'input' as const;
  async execute(block: WorkflowBlock<InputAttrs>, io: BlockIo): Promise<BlockOutcome> {
    return { output: io.inputs[block.name] ?? null };
  }
}

export const inputKind = defineBlockKind({
  kind: 'input',
  nodeType: 'inputBlock',
  attrs: InputAttrs,
  replayable: true,
  executor: () => new InputBlockExecutor(),
});
