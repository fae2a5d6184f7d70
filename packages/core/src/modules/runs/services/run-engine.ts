import { TrellisError } from '../../../kernel/errors.js';
import type { AiUsage } from '../../../ports/ai-provider.js';
import type { BlockExecutor, BlockIo } from '../blocks/executor.js';
import { asText } from '../blocks/template.js';
import type { BlockKind, WorkflowBlock } from '../blocks/workflow.js';
import { runErrors, runFailure } from '../errors.js';
import type { RunEventSink } from './event-sink.js';
import { outputOf, type RunState } from './run-state.js';

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
}

export class RunSuperseded extends Error {}
export class RunCancelled extends Error {}

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

/**
 * Quotas on the output of a block and of a run's execution (`runs.max*` settings): `block_chunk`,
 * `tool_start` and `tool_result` events, counted and measured (UTF-8 bytes of the delta, or of
 * the tool result's JSON). The block that passes one fails with `output_limit_exceeded`.
 */
export interface OutputLimits {
  blockEvents: number;
  blockBytes: number;
  runEvents: number;
  runBytes: number;
}

const unlimited: OutputLimits = { blockEvents: Infinity, blockBytes: Infinity, runEvents: Infinity, runBytes: Infinity };

/** What a block's and its execution's output used so far; `exceeded` is set (and stays) once a quota struck. */
class OutputMeter {
  blockEvents = 0;
  blockBytes = 0;
  runEvents = 0;
  runBytes = 0;
  exceeded: TrellisError | null = null;

  constructor(private readonly limits: OutputLimits) {}

  /** Counts one event of `bytes`; throws `output_limit_exceeded` when it passes a quota (and for any event after). */
  charge(bytes: number): void {
    if (this.exceeded) throw this.exceeded;
    this.blockEvents += 1;
    this.blockBytes += bytes;
    this.runEvents += 1;
    this.runBytes += bytes;
    const { limits } = this;
    if (this.blockEvents > limits.blockEvents) this.exceeded = runErrors.outputLimit('block\'s output events', limits.blockEvents, 'maxBlockEvents');
    else if (this.blockBytes > limits.blockBytes) this.exceeded = runErrors.outputLimit('block\'s output bytes', limits.blockBytes, 'maxBlockOutputBytes');
    else if (this.runEvents > limits.runEvents) this.exceeded = runErrors.outputLimit('run\'s output events', limits.runEvents, 'maxRunEvents');
    else if (this.runBytes > limits.runBytes) this.exceeded = runErrors.outputLimit('run\'s output bytes', limits.runBytes, 'maxRunOutputBytes');
    if (this.exceeded) throw this.exceeded;
  }

  startBlock(): void {
    this.blockEvents = 0;
    this.blockBytes = 0;
    this.exceeded = null;
  }
}

/** Why an execution was stopped from outside. */
export type StopReason = 'timeout' | 'cancel' | 'shutdown';

export interface ExecuteOptions {
  /** Aborted by the queue (shutdown) or by a cancel. */
  signal?: AbortSignal;
  /** Returns why `signal` aborted ('shutdown' when not known). */
  stopReason?: () => StopReason;
  heartbeatMs?: number;
}

const errorOf = (error: unknown): { code: string; message: string } => {
  if (error instanceof TrellisError) return { code: error.code, message: error.message };
  return { code: 'block_failed', message: error instanceof Error ? error.message : String(error) };
};

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
      controller.abort(new TrellisError('unavailable', why === 'timeout' ? runFailure.timeout.code : why === 'cancel' ? runFailure.cancelled.code : 'run_interrupted', 'The run was stopped.'));
    };
    const onOuterAbort = () => stop(options.stopReason?.() ?? 'shutdown');
    if (options.signal?.aborted) onOuterAbort();
    options.signal?.addEventListener('abort', onOuterAbort);
    const timer = setTimeout(() => stop('timeout'), Math.max(0, state.deadline - Date.now()));
    const heartbeat = setInterval(() => void persistence.heartbeat().catch(() => undefined), options.heartbeatMs ?? 10_000);
    heartbeat.unref?.();
    state.status = 'running';
    const meter = new OutputMeter(this.limits);
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
        const outcome = await this.runBlock(state, block, sink, controller.signal, meter);
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
    const session = state.sessions.find((s) => s.blockId === state.waiting!.blockId)!;
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

  private async runBlock(state: RunState, block: WorkflowBlock, sink: RunEventSink, signal: AbortSignal, meter: OutputMeter): Promise<'done' | 'wait' | 'stop'> {
    const session = state.sessions.find((s) => s.blockId === block.id)!;
    const started = Date.now();
    session.status = 'running';
    session.startedAt = new Date(started).toISOString();
    delete session.error;
    sink.emit('block_start', { blockId: block.id, blockType: block.type, blockName: block.name });
    const ctx = new Map(state.ctx.map((entry) => [entry.name, entry.value]));
    meter.startBlock();
    const io: BlockIo = {
      runId: state.id,
      userId: state.userId,
      tenant: state.teamId ?? state.userId,
      signal,
      ctx,
      inputs: state.inputs,
      remainingMs: () => Math.max(0, state.deadline - Date.now()),
      chunk: (delta) => {
        meter.charge(Buffer.byteLength(delta));
        sink.emitChunk(block.id, delta);
        return sink.backlog();
      },
      toolStart: (toolCallId, toolName) => {
        meter.charge(Buffer.byteLength(toolName));
        sink.emit('tool_start', { blockId: block.id, toolCallId, toolName });
        return sink.backlog();
      },
      toolResult: (toolCallId, result) => {
        meter.charge(Buffer.byteLength(JSON.stringify(result ?? null)));
        sink.emit('tool_result', { blockId: block.id, toolCallId, result: result ?? null });
        return sink.backlog();
      },
      modelUsage: (modelId: string, usage: AiUsage) => {
        const entry = (state.usage.models[modelId] ??= { inputTokens: 0, outputTokens: 0, calls: 0 });
        entry.inputTokens += usage.inputTokens;
        entry.outputTokens += usage.outputTokens;
        entry.calls += 1;
      },
      sandboxTime: (ms) => void (state.usage.sandboxMs += Math.round(ms)),
    };
    const finish = () => {
      session.finishedAt = new Date().toISOString();
      session.durationMs = Date.now() - started;
    };
    try {
      const executor = this.executors.get(block.kind);
      if (!executor) throw new TrellisError('not_implemented', 'block_kind_unsupported', `No executor handles ${block.kind} blocks.`);
      const outcome = await executor.execute(block, io);
      if (signal.aborted) throw signal.reason;
      // A quota struck and the executor went on regardless: the block fails all the same.
      if (meter.exceeded) throw meter.exceeded;
      if ('wait' in outcome) {
        session.status = 'waiting';
        state.status = 'waiting';
        state.waiting = { blockId: block.id, question: outcome.wait.question };
        return 'wait';
      }
      finish();
      session.status = 'completed';
      session.output = asText(outcome.output);
      if (outcome.console?.length) session.console = outcome.console;
      state.ctx.push({ name: block.name, blockId: block.id, blockType: block.type, value: outcome.output ?? null });
      sink.emit('block_complete', { blockId: block.id, output: outcome.output ?? null });
      sink.emit('block_end', { blockId: block.id });
      return 'done';
    } catch (error) {
      finish();
      if (signal.aborted && signal.reason instanceof TrellisError && signal.reason.code === 'run_interrupted') {
        // The process is stopping: the block runs again in the next attempt, from this checkpoint.
        session.status = 'pending';
        return 'stop';
      }
      const failure = signal.aborted ? errorOf(signal.reason) : errorOf(meter.exceeded ?? error);
      if (signal.aborted) failure.message = signal.reason instanceof TrellisError && signal.reason.code === runFailure.timeout.code ? runFailure.timeout.message : failure.message;
      session.status = 'failed';
      session.error = failure;
      sink.emit('block_error', { blockId: block.id, error: failure.message, code: failure.code });
      sink.emit('block_end', { blockId: block.id });
      if (signal.aborted) return 'stop';
      if ((block.onError ?? state.onError) === 'continue') {
        state.ctx.push({ name: block.name, blockId: block.id, blockType: block.type, value: null });
        return 'done';
      }
      state.error = failure;
      return 'stop';
    }
  }
}
