import type { BlockExecutor, BlockIo, BlockOutcome } from './executor.js';
import { renderTemplate, renderValue } from './template.js';
import type { WorkflowBlock } from './workflow.js';

/** Input block: its output is the validated input value (or its default). */
export class InputBlockExecutor implements BlockExecutor {
  readonly kind = 'input' as const;
  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    return { output: io.inputs[block.name] ?? null };
  }
}

/** Output block: its text (or `attrs.value`) rendered; one `{{ reference }}` alone keeps the value's JSON type. */
export class OutputBlockExecutor implements BlockExecutor {
  readonly kind = 'output' as const;
  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    const template = typeof block.attrs.value === 'string' ? block.attrs.value : block.text;
    return { output: renderValue(template, io.ctx) };
  }
}

/** Ask block: the run waits for a person's answer to the rendered question. */
export class AskBlockExecutor implements BlockExecutor {
  readonly kind = 'ask' as const;
  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    const template = typeof block.attrs.question === 'string' && block.attrs.question ? block.attrs.question : block.text;
    return { wait: { question: renderTemplate(template, io.ctx) } };
  }
}
