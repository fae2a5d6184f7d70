import type { ModelCallFrame } from '../../ai/index.js';
import type { AiUsage } from '../../../ports/ai-provider.js';
import type { RunUsage, RunWaiting } from '../entities/run.entity.js';
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
  /** The attempt of the block under a retry policy (2 and up; absent on the first). See blocks/failure-policy.ts. */
  attempt?: number;
  /** Milliseconds left before the run's timeout. */
  remainingMs(): number;
  /**
   * Where the block runs, for idempotency keys (`blockToolCallKey`): its path in the workflow
   * (default: its id, a top-level block) and the iteration of an enclosing loop (default 0).
   */
  path?: string;
  iteration?: number;
  /**
   * The result an earlier attempt of this run recorded for a tool call's idempotency key (from
   * the run's log), or undefined: a call answered here is not made again.
   */
  recall(key: string): Promise<{ result: unknown } | undefined>;
  /** Who the block's model calls are recorded for (the run's attempt; see docs/observability.md). */
  modelCalls?: ModelCallFrame;
  /**
   * Called before every model call the block makes (docs/runs.md, "Budgets"): when the call would
   * exceed a budget of the run, the run pauses (waiting, reason `budget`) and this throws the
   * run's stop (let it through). Absent when the run has no budget to check.
   */
  beforeModelCall?(modelId: string): Promise<void>;
  /** Pauses the run for a budget a block found exceeded (a sub-workflow's run waiting for one); throws the run's stop. */
  waitForBudget?(waiting: Omit<RunWaiting, 'blockId'>): never;
  /**
   * Output of the block. `chunk` emits a `block_chunk` delta, `toolStart` and `toolResult` their
   * events. Each throws `output_limit_exceeded` once the block or the run passed a quota on its
   * output (the block fails with it; an executor lets it through). Each answers a promise when the
   * run's event log is behind: a producer that can wait (a stream it reads, a sandbox) waits for it
   * before it produces more (back-pressure); undefined otherwise.
   */
  chunk(delta: string): Promise<void> | undefined;
  /**
   * `chunk` for each string of `json`, the JSON text of an array of strings as `JSON.stringify`
   * writes it (a sandbox's batch of emits: `CodeSandboxRequest.onEmits`), in order, with the same
   * events and quotas; the deltas are written on as the JSON they came in, not parsed and
   * serialized again.
   */
  chunks(json: string): Promise<void> | undefined;
  toolStart(toolCallId: string, toolName: string): Promise<void> | undefined;
  /**
   * With `idempotencyKey`, the `tool_result` carries it and is stored before the promise answered
   * settles: a later attempt finds the result in the log (`recall`) instead of calling again.
   */
  toolResult(toolCallId: string, result: unknown, idempotencyKey?: string): Promise<void> | undefined;
  modelUsage(modelId: string, usage: AiUsage): void;
  sandboxTime(ms: number): void;
  /**
   * The run's model usage so far, as this attempt counts it (from its checkpoint on): tokens and
   * calls per AI model id. Code blocks see it as `run.usage.models`.
   */
  usage?(): Readonly<RunUsage['models']>;
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
