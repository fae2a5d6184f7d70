import type { AiUsage } from '../../../ports/ai-provider.js';
import type { BlockKind, WorkflowBlock } from './workflow.js';

/** What an executing block may see and do. Everything it emits becomes run events. */
export interface BlockIo {
  runId: string;
  /** The user the run executes for (AI models and tools are resolved for this user). */
  userId: string;
  /** The team the run bills to (or its user): whose share of shared resources (the sandbox's workers) it uses. */
  tenant: string;
  /** Aborted on timeout or cancel; executors stop promptly. */
  signal: AbortSignal;
  /** Inputs, earlier blocks' outputs and text blocks' text, by name. */
  ctx: ReadonlyMap<string, unknown>;
  /** The validated inputs by input block name. */
  inputs: Readonly<Record<string, unknown>>;
  /** Milliseconds left before the run's timeout. */
  remainingMs(): number;
  /**
   * Output of the block. `chunk` emits a `block_chunk` delta, `toolStart` and `toolResult` their
   * events. Each throws `output_limit_exceeded` once the block or the run passed a quota on its
   * output (the block fails with it; an executor lets it through). Each answers a promise when the
   * run's event log is behind: a producer that can wait (a stream it reads, a sandbox) waits for it
   * before it produces more (back-pressure); undefined otherwise.
   */
  chunk(delta: string): Promise<void> | undefined;
  toolStart(toolCallId: string, toolName: string): Promise<void> | undefined;
  toolResult(toolCallId: string, result: unknown): Promise<void> | undefined;
  modelUsage(modelId: string, usage: AiUsage): void;
  sandboxTime(ms: number): void;
}

export type BlockOutcome =
  | { output: unknown; console?: Array<{ level: string; text: string }> }
  /** An ask block: the run waits for an answer to `question`. */
  | { wait: { question: string } };

/**
 * One kind of block. Every kind (input, LLM, code, tool, ask, output, and any a package registers)
 * runs behind this interface; `A` is the type of its attrs, already checked against the kind's
 * schema when the workflow was parsed.
 */
export interface BlockExecutor<A = Record<string, unknown>> {
  readonly kind: BlockKind;
  execute(block: WorkflowBlock<A>, io: BlockIo): Promise<BlockOutcome>;
}
