import type { AiUsage } from '../../../ports/ai-provider.js';
import type { BlockKind, WorkflowBlock } from './workflow.js';

/** What an executing block may see and do. Everything it emits becomes run events. */
export interface BlockIo {
  runId: string;
  /** The user the run executes for (AI models and tools are resolved for this user). */
  userId: string;
  /** Aborted on timeout or cancel; executors stop promptly. */
  signal: AbortSignal;
  /** Inputs, earlier blocks' outputs and text blocks' text, by name. */
  ctx: ReadonlyMap<string, unknown>;
  /** The validated inputs by input block name. */
  inputs: Readonly<Record<string, unknown>>;
  /** Milliseconds left before the run's timeout. */
  remainingMs(): number;
  /** A `block_chunk` delta. */
  chunk(delta: string): void;
  toolStart(toolCallId: string, toolName: string): void;
  toolResult(toolCallId: string, result: unknown): void;
  modelUsage(modelId: string, usage: AiUsage): void;
  sandboxTime(ms: number): void;
}

export type BlockOutcome =
  | { output: unknown; console?: Array<{ level: string; text: string }> }
  /** An ask block: the run waits for an answer to `question`. */
  | { wait: { question: string } };

/** One kind of block. Every kind (input, LLM, code, tool, ask, output) runs behind this interface. */
export interface BlockExecutor {
  readonly kind: BlockKind;
  execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome>;
}
