/**
 * An example block kind: `uppercaseBlock` renders its text (a template: `{{ topic }}`) and answers
 * it in capitals, streaming one word at a time, with `attrs.exclaim` exclamation marks after it.
 *
 *   { "type": "uppercaseBlock", "attrs": { "id": "u1", "name": "loud", "exclaim": 2, "locale": "tr" },
 *     "content": [{ "type": "text", "text": "hello {{ topic }}" }] }
 *
 * Everything a kind is lives in this one declaration; `uppercaseModule` registers it (see server.ts).
 */
import { Type, type Static } from '@sinclair/typebox';
import { attrIssue, blockKindModule, defineBlockKind, renderTemplate, TrellisError, type BlockExecutor, type BlockIo, type BlockOutcome, type WorkflowBlock } from '@trellis/core';

/** The attrs: JSON Schema for the workflow's validation and, through `Static`, their TypeScript type. */
export const UppercaseAttrs = Type.Object({
  exclaim: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, ...attrIssue('isIn', 'must be a whole number from 0 to 5') })),
  /** A BCP 47 language tag for the case mapping (`tr` makes `i` into `İ`). */
  locale: Type.Optional(Type.String({ minLength: 2 })),
});
export type UppercaseAttrs = Static<typeof UppercaseAttrs>;

class UppercaseExecutor implements BlockExecutor<UppercaseAttrs> {
  readonly kind = 'uppercase';

  async execute(block: WorkflowBlock<UppercaseAttrs>, io: BlockIo): Promise<BlockOutcome> {
    // `block.attrs` was checked against the schema when the workflow was parsed: no casts here.
    const { exclaim = 0, locale } = block.attrs;
    let text: string;
    try {
      text = renderTemplate(block.text, io.ctx).toLocaleUpperCase(locale);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error; // unknown_reference and the like, as they are
      // A TrellisError's code is the block's error code (`block_error` event, run result).
      throw new TrellisError('bad_request', 'invalid_locale', `"${locale}" is not a language tag this server knows.`);
    }
    for (const piece of text.split(/(?<=\s)/)) {
      if (io.signal.aborted) throw io.signal.reason;
      // Back-pressure: a promise means the run's event log is behind; wait before producing more.
      const behind = io.chunk(piece);
      if (behind) await behind;
    }
    return { output: text + '!'.repeat(exclaim) };
  }
}

export const uppercaseKind = defineBlockKind({
  kind: 'uppercase',
  nodeType: 'uppercaseBlock',
  attrs: UppercaseAttrs,
  // Pure and cheap: a continuation may run it again, so no checkpoint is needed around it.
  replayable: true,
  check: (_attrs, text) => (text ? [] : [{ field: 'text', constraint: 'required', message: 'an uppercase block needs text (its content)' }]),
  executor: () => new UppercaseExecutor(),
});

/** The module an embedding server adds to its modules to have the kind. */
export const uppercaseModule = blockKindModule('block-kind-uppercase', [uppercaseKind]);
