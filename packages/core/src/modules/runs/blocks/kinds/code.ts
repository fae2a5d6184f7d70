import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../../kernel/errors.js';
import { codeSandboxServiceIdentifier, type CodeSandbox } from '../../../../ports/code-sandbox.js';
import { runsConfigServiceIdentifier } from '../../tokens.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind } from '../kind.js';
import type { WorkflowBlock } from '../workflow.js';

const languages = new Set(['javascript', 'js']);

export const CodeAttrs = Type.Object({
  /** `javascript` or `js` (any case): a code block in another language is a text block. */
  language: Type.String(),
});
export type CodeAttrs = Static<typeof CodeAttrs>;

/**
 * Code block (`codeBlock` with language javascript or js): its text is the body of a function run
 * in the CodeSandbox port. It sees `inputs` (by input name), `blocks` (every earlier output and
 * text block by name) and `run.usage.models` (the run's model usage so far); `emit(text)` streams
 * `block_chunk`s; the return value is the output.
 */
export class CodeBlockExecutor implements BlockExecutor<CodeAttrs> {
  readonly kind = 'code' as const;

  constructor(
    private readonly sandbox: () => CodeSandbox | undefined,
    private readonly limits: { timeoutMs: number; memoryBytes: number },
  ) {}

  async execute(block: WorkflowBlock<CodeAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const sandbox = this.sandbox();
    if (!sandbox) {
      throw new TrellisError('unavailable', 'sandbox_not_configured', 'No CodeSandbox is bound in this deployment, so code blocks cannot run.');
    }
    const blocks = Object.fromEntries(io.ctx);
    const started = Date.now();
    try {
      const result = await sandbox.run({
        code: block.text,
        // `run.usage.models`: the run's tokens and calls per AI model so far (a copy).
        globals: { inputs: { ...io.inputs }, blocks, run: { usage: { models: structuredClone(io.usage?.() ?? {}) } } },
        // The run's own deadline aborts `signal`, which also ends the wait for a sandbox worker
        // (the wait counts against the run's timeout); the block's limit is its own, from when
        // its code starts.
        timeoutMs: this.limits.timeoutMs,
        tenant: io.tenant,
        memoryBytes: this.limits.memoryBytes,
        signal: io.signal,
        // A quota that strikes throws here: the sandbox stops the code with that error. A
        // promise (the event log is behind) holds the code back in `emit`.
        onEmit: (text) => io.chunk(text),
        onEmits: (json) => io.chunks(json),
      });
      io.sandboxTime(result.durationMs);
      return { output: result.value ?? null, console: result.console };
    } catch (error) {
      const measured = (error as { durationMs?: unknown }).durationMs;
      io.sandboxTime(typeof measured === 'number' && measured > 0 ? measured : Date.now() - started);
      throw error;
    }
  }
}

export const codeKind = defineBlockKind({
  kind: 'code',
  nodeType: 'codeBlock',
  attrs: CodeAttrs,
  accepts: (attrs) => typeof attrs.language === 'string' && languages.has(attrs.language.toLowerCase()),
  // The sandbox has no I/O: running the code again gives the same result.
  replayable: true,
  executor: (services) => {
    const config = services.get(runsConfigServiceIdentifier);
    return new CodeBlockExecutor(() => services.optional(codeSandboxServiceIdentifier), { timeoutMs: config.codeTimeoutMs, memoryBytes: config.codeMemoryBytes });
  },
});
