import type { ModelCallFrame } from '../../ai/index.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { BlockExecutor } from '../blocks/executor.js';
import { asText } from '../blocks/template.js';
import type { BlockKind, WorkflowBlock } from '../blocks/workflow.js';
import { runFailure } from '../errors.js';
import type { RunWaiting } from '../entities/run.entity.js';
import { budgetWaiting, type BudgetShortfall } from './run-budget.js';
import { runControl } from './engine/control.js';
import { RunOutput, unlimited, type OutputLimits } from './engine/output-meter.js';
import { RunCancelled, RunSuperseded } from './attempt-errors.js';
import { AttemptEnded, step, type EngineRun } from './engine/step.js';
import type { RunEventSink } from './event-sink.js';
import { outputOf, type RunState } from './run-state.js';

export type { OutputLimits } from './engine/output-meter.js';

export { completion, initialState, outputOf, publicSession, type RunState } from './run-state.js';

/** Where an execution saves its progress; a debug run saves nothing. */
export interface RunPersistence {
  /**
   * Saves the state after a block together with the events emitted so far (one write). Throws
   * `RunSuperseded` when another attempt took the run over, `RunCancelled` when a cancel was asked for.
   */
  checkpoint(state: RunState, sink: RunEventSink): Promise<void>;
  /**
   * Saves the final state with the events emitted so far (and settles or releases the credits),
   * and emits `run_complete` (`completion(state)`), published no earlier than the final state is stored.
   */
  finish(state: RunState, sink: RunEventSink): Promise<void>;
  heartbeat(): Promise<void>;
  /** A tool result an earlier attempt recorded in the run's log under an idempotency key (see tool-effects.ts). */
  recall?(key: string): Promise<{ result: unknown } | undefined>;
}

export { RunCancelled, RunSuperseded };

/*
 * Replayable blocks (`WorkflowBlock.replayable`, declared by their kind: inputs, outputs, code in
 * the sandbox, which has no I/O) are cheap to run again and touch nothing outside the run: no
 * checkpoint is written between two of them. Should the process die, the next attempt runs them
 * again from the previous checkpoint, to the same result. Every other block (LLM, tool, ask)
 * starts from a checkpoint and is followed by one.
 */
/** After replayable blocks that took this long together, a checkpoint is written anyway (a retry should not redo much). */
export const CHECKPOINT_AFTER_MS = 1_000;
/**
 * A checkpoint skipped between two replayable blocks is still written if the next block runs
 * longer than this: readers of the run then see the finished blocks while a long one runs, and a
 * retry starts at the long block instead of redoing the ones before it. Trivial runs, whose
 * blocks all finish sooner, write no checkpoint in between.
 */
export const DEFERRED_CHECKPOINT_MS = 250;

/** The part of the state a checkpoint writes, copied so the running block cannot change it. */
function checkpointSnapshot(state: RunState): RunState {
  return { ...state, sessions: structuredClone(state.sessions), ctx: state.ctx.slice(), usage: structuredClone(state.usage), waiting: state.waiting && { ...state.waiting } };
}

/** Why an execution was stopped from outside. */
export type StopReason = 'timeout' | 'cancel' | 'shutdown' | 'budget';

export interface ExecuteOptions {
  /** Aborted by the queue (shutdown) or by a cancel. */
  signal?: AbortSignal;
  /** Returns why `signal` aborted ('shutdown' when not known). */
  stopReason?: () => StopReason;
  heartbeatMs?: number;
  /** Who the blocks' model calls are recorded for (the run's attempt and credit hold). */
  modelCalls?: ModelCallFrame;
  /**
   * The budget check made before every model call (run-budget.ts): the budget the call would
   * exceed, or null. A call it refuses pauses the run (waiting, reason `budget`). Absent: no budget.
   */
  budget?: (modelId: string) => Promise<BudgetShortfall | null>;
}

/**
 * Executes a run's blocks from its cursor, top to bottom, through one `BlockExecutor` per kind,
 * emitting the spec's events, checkpointing after every block, and ending with `run_complete`
 * (or `run_waiting` at an ask block). The run's timeout aborts every block it started.
 */
export class RunEngine {
  constructor(
    private readonly executors: ReadonlyMap<BlockKind, BlockExecutor>,
    private readonly limits: OutputLimits = unlimited,
  ) {}

  async execute(state: RunState, sink: RunEventSink, persistence: RunPersistence, options: ExecuteOptions = {}): Promise<void> {
    const controller = new AbortController();
    let reason: StopReason | null = null;
    const stop = (why: StopReason) => {
      if (reason) return;
      reason = why;
      // A budget pause stops the blocks as a stopping process does: each goes on from its checkpoint later.
      controller.abort(new TrellisError('unavailable', why === 'timeout' ? runFailure.timeout.code : why === 'cancel' ? runFailure.cancelled.code : 'run_interrupted', 'The run was stopped.'));
    };
    const onOuterAbort = () => stop(options.stopReason?.() ?? 'shutdown');
    if (options.signal?.aborted) onOuterAbort();
    options.signal?.addEventListener('abort', onOuterAbort);
    const timer = setTimeout(() => stop('timeout'), Math.max(0, state.deadline - Date.now()));
    const heartbeat = setInterval(() => void persistence.heartbeat().catch(() => undefined), options.heartbeatMs ?? 10_000);
    heartbeat.unref?.();
    state.status = 'running';
    // Checkpoints asked for inside control blocks: one at a time; a call while one waits shares it.
    let saving: Promise<void> = Promise.resolve();
    let queued: Promise<void> | null = null;
    const save = (): Promise<void> => {
      if (queued) return queued;
      const write = saving.then(async () => {
        queued = null;
        savedAt = Date.now();
        try {
          await persistence.checkpoint(checkpointSnapshot(state), sink);
        } catch (error) {
          if (error instanceof RunCancelled) stop('cancel');
          throw new AttemptEnded(error);
        }
      });
      queued = write;
      saving = write.catch(() => undefined);
      return write;
    };
    // The first budget wait asked for (a model call refused, or a sub-workflow's run that waits for a budget).
    let budgetWait: RunWaiting | null = null;
    const pause = (waiting: RunWaiting): never => {
      budgetWait ??= waiting;
      stop('budget');
      throw controller.signal.reason;
    };
    const guard = options.budget;
    const budget: EngineRun['budget'] = {
      check: guard
        ? async (blockId, path, modelId) => {
            if (controller.signal.aborted) throw controller.signal.reason;
            const shortfall = await guard(modelId);
            if (shortfall) pause(budgetWaiting(blockId, path, shortfall));
          }
        : undefined,
      pause: (blockId, path, waiting) => pause({ ...waiting, blockId, ...(path !== undefined && path !== blockId ? { path } : {}) }),
    };
    const run: EngineRun = { state, sink, signal: controller.signal, executors: this.executors, output: new RunOutput(this.limits), save, runContainer: runControl, recall: persistence.recall?.bind(persistence), modelCalls: options.modelCalls, budget };
    let savedAt = Date.now();
    // A skipped checkpoint, written after DEFERRED_CHECKPOINT_MS unless the next boundary comes first.
    let deferred: { timer: ReturnType<typeof setTimeout>; write: Promise<void> | null } | null = null;
    const settleDeferred = async () => {
      const pending = deferred;
      deferred = null;
      if (!pending) return;
      clearTimeout(pending.timer);
      await pending.write;
    };
    const deferCheckpoint = () => {
      const snapshot = checkpointSnapshot(state);
      const entry: { timer: ReturnType<typeof setTimeout>; write: Promise<void> | null } = {
        write: null,
        timer: setTimeout(() => {
          savedAt = Date.now();
          entry.write = persistence.checkpoint(snapshot, sink);
          // Its failure is taken up by settleDeferred at the next boundary.
          entry.write.catch(() => undefined);
        }, DEFERRED_CHECKPOINT_MS),
      };
      deferred = entry;
    };
    const settle = async () => {
      try {
        await settleDeferred();
      } catch (error) {
        if (error instanceof RunCancelled) stop('cancel');
        else throw error;
      }
    };
    try {
      if (state.fresh) {
        sink.emit('run_start', { runId: state.id, documentId: state.documentId });
        state.fresh = false;
      }
      if (state.waiting && state.hasAnswer) this.answerAsk(state, sink);
      while (state.cursor < state.blocks.length && !reason) {
        const block = state.blocks[state.cursor]!;
        if (block.kind === 'text') {
          state.cursor++;
          continue;
        }
        let outcome: 'done' | 'wait' | 'stop';
        try {
          outcome = await this.runBlock(run, block);
        } catch (error) {
          // A checkpoint inside a control block failed: cancelled (stopped above) or superseded.
          if (!(error instanceof AttemptEnded)) throw error;
          if (error.cause instanceof RunCancelled) break;
          throw error.cause;
        }
        if (outcome === 'wait') {
          await settleDeferred();
          // Published once the checkpoint that stores the waiting state committed: a client that
          // saw run_waiting reads a waiting run (and may resume it at once).
          const waiting = state.waiting!;
          sink.emitStored('run_waiting', { runId: state.id, blockId: waiting.blockId, question: waiting.question });
          await persistence.checkpoint(state, sink);
          return;
        }
        if (outcome === 'stop' || reason) break;
        state.cursor++;
        const next = state.blocks.slice(state.cursor).find((later) => later.kind !== 'text');
        // After the last block the final record (written next) is the checkpoint.
        if (!next) {
          state.cursor = state.blocks.length;
          break;
        }
        // A replayable block followed by another is saved with a later checkpoint (or the final
        // record), unless it took long; a block that is not replayable always starts from a checkpoint.
        await settle();
        if (reason) break;
        if (block.replayable && next.replayable && Date.now() - savedAt < CHECKPOINT_AFTER_MS) {
          deferCheckpoint();
          continue;
        }
        savedAt = Date.now();
        try {
          await persistence.checkpoint(state, sink);
        } catch (error) {
          if (error instanceof RunCancelled) stop('cancel');
          else throw error;
        }
      }
      await settle();
      if (reason === 'shutdown') return;
      if (reason === 'budget' && budgetWait) {
        // Waits like a run at an ask block, at the top-level block the refused call was made in
        // (a continuation runs it again: a container skips what it completed).
        const waiting: RunWaiting = budgetWait;
        const top = state.blocks[state.cursor];
        const session = top && state.sessions.find((s) => s.blockId === top.id && s.path === undefined);
        if (session) session.status = 'waiting';
        state.status = 'waiting';
        state.waiting = waiting;
        sink.emitStored('run_waiting', { runId: state.id, blockId: waiting.blockId, question: waiting.question, reason: 'budget', budget: waiting.budget, ...(waiting.path ? { path: waiting.path } : {}) });
        await persistence.checkpoint(state, sink);
        return;
      }
      if (reason === 'timeout' || reason === 'cancel') {
        const failure = reason === 'timeout' ? runFailure.timeout : runFailure.cancelled;
        state.timedOut = reason === 'timeout';
        state.status = reason === 'timeout' ? 'timed_out' : 'cancelled';
        state.error = failure;
        sink.emit('run_error', { runId: state.id, error: failure.code, message: failure.message });
      } else if (state.error) {
        state.status = 'failed';
        sink.emit('run_error', { runId: state.id, error: state.error.code, message: state.error.message });
      } else {
        state.status = 'completed';
      }
      state.output = outputOf(state);
      // The record is final before run_complete goes out: a client that saw it reads the final run.
      await persistence.finish(state, sink);
    } finally {
      if (deferred) clearTimeout((deferred as { timer: ReturnType<typeof setTimeout> }).timer);
      clearTimeout(timer);
      clearInterval(heartbeat);
      options.signal?.removeEventListener('abort', onOuterAbort);
    }
  }

  /** The continuation of an ask block: its answer is its output. */
  private answerAsk(state: RunState, sink: RunEventSink): void {
    const session = state.sessions.find((s) => s.blockId === state.waiting!.blockId && s.path === undefined)!;
    const block = state.blocks[state.cursor]!;
    session.status = 'completed';
    session.output = asText(state.answer);
    session.finishedAt = new Date().toISOString();
    state.ctx.push({ name: block.name, blockId: block.id, blockType: block.type, value: state.answer });
    sink.emit('block_complete', { blockId: block.id, output: state.answer });
    sink.emit('block_end', { blockId: block.id });
    state.waiting = null;
    state.answer = null;
    state.hasAnswer = false;
    state.cursor++;
  }

  /** Runs a top-level block; its output (null when skipped or failed and continued) joins the run's context. */
  private async runBlock(run: EngineRun, block: WorkflowBlock): Promise<'done' | 'wait' | 'stop'> {
    const { state } = run;
    const session = state.sessions.find((s) => s.blockId === block.id && s.path === undefined)!;
    const vars = new Map(state.ctx.map((entry) => [entry.name, entry.value]));
    const result = await step(run, block, session, { where: {}, vars });
    if (result.kind === 'done') {
      state.ctx.push({ name: block.name, blockId: block.id, blockType: block.type, value: result.value });
      return 'done';
    }
    if (result.kind === 'failed') state.error = result.error;
    return result.kind === 'wait' ? 'wait' : 'stop';
  }
}
