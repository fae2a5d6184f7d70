import { whereOf } from './engine/scope.js';
import { parseWorkflow } from '../blocks/workflow.js';
import { Run, terminalRunStatuses, type BlockSession } from '../entities/run.entity.js';
import { runErrors, runFailure } from '../errors.js';
import { notify, subjectOf, type RunContext } from './run-context.js';
import type { RunCredits } from './run-credits.js';
import { completion, outputOf, RunCancelled, RunSuperseded, type RunPersistence, type RunState } from './run-engine.js';
import { StoredEventSink } from './stored-event-sink.js';
import { logRecall } from './tool-effects.js';

/** A stored run's persistence, with the duration its final record stored once it finished. */
export type StoredRunPersistence = RunPersistence & { durationMs: number | null };

const ended = (session: BlockSession) => session.status === 'completed' || session.status === 'failed';

/** How long an ended block ran (its recorded duration, else from its start and end times). */
function blockDuration(session: BlockSession): number {
  if (session.durationMs !== undefined) return session.durationMs;
  if (session.startedAt && session.finishedAt) return Math.max(0, Date.parse(session.finishedAt) - Date.parse(session.startedAt));
  return 0;
}

/**
 * What an attempt of a stored run writes: its checkpoints, its final record with the credit
 * settlement and `run_complete`, the ending of a run no engine executes; and the run hooks that
 * follow those writes.
 */
export class RunRecorder {
  constructor(
    private readonly ctx: RunContext,
    private readonly credits: RunCredits,
  ) {}

  /** The engine state of a stored run (its checkpoint). */
  stateOf(run: Run): RunState {
    const blocks = parseWorkflow(run.content, runErrors.invalidWorkflow, this.ctx.kinds);
    return {
      id: run.id,
      documentId: run.documentId,
      userId: run.userId,
      teamId: run.teamId,
      status: run.status,
      inputs: run.inputs,
      blocks,
      cursor: run.cursor,
      sessions: run.sessions,
      ctx: run.ctx,
      usage: run.usage,
      onError: run.onError,
      startedAt: (run.startedAt ?? run.createdAt).getTime(),
      deadline: (run.deadlineAt ?? new Date(Date.now() + run.timeoutSeconds * 1000)).getTime(),
      timedOut: run.timedOut,
      waiting: run.waiting,
      answer: run.answer,
      hasAnswer: run.waiting !== null && run.status !== 'waiting',
      output: run.output,
      error: run.error,
      fresh: run.seqCeiling === 0,
    };
  }

  /**
   * A tracker of the run's top-level blocks that ended: `stored(state)`, called once a write of
   * `state` committed, fires `run.blockFinished` for each block that ended since the last call
   * (blocks that had ended when the attempt began were announced by an earlier one).
   */
  private blockHooks(run: Run): (state: RunState) => Promise<void> {
    const announced = new Set(run.sessions.filter(ended).map((s) => s.blockId));
    return async (state) => {
      for (const session of state.sessions) {
        // Executions inside a container are not top-level blocks.
        if (session.path !== undefined || !ended(session) || announced.has(session.blockId)) continue;
        announced.add(session.blockId);
        const status = session.status as 'completed' | 'failed';
        await notify(this.ctx, 'run.blockFinished', { ...subjectOf(run), blockId: session.blockId, status, durationMs: blockDuration(session) });
      }
    };
  }

  persistence(run: Run, sink: StoredEventSink): StoredRunPersistence {
    const { ctx } = this;
    const fence = { id: run.id, attempt: run.attempt };
    const blocksStored = this.blockHooks(run);
    const persistence: StoredRunPersistence = {
      durationMs: null,
      checkpoint: async (s: RunState) => {
        // The block's events and the checkpoint in one transaction.
        const now = ctx.clock.now();
        const changed = await sink.flushWith((tx) =>
          tx.nativeUpdate(
            Run,
            { ...fence, cancelRequested: false },
            { cursor: s.cursor, sessions: s.sessions, ctx: s.ctx, usage: s.usage, status: s.status, waiting: s.waiting, answer: null, heartbeatAt: now, updatedAt: now },
          ),
        );
        if (changed) return blocksStored(s);
        const current = await ctx.fork().findOne(Run, fence);
        if (!current) throw new RunSuperseded();
        if (current.cancelRequested) {
          await ctx.fork().nativeUpdate(Run, fence, { cursor: s.cursor, sessions: s.sessions, ctx: s.ctx, usage: s.usage });
          await blocksStored(s);
          if (s.status === 'waiting') {
            // The cancel came while the run paused: end it now.
            await this.endWithoutEngine(current, 'cancelled');
            return;
          }
          throw new RunCancelled();
        }
      },
      // Tool results of earlier attempts, read from the log at the first tool call (none before the run's first event).
      recall: logRecall(run.seqCeiling === 0, (after) => ctx.store.read(run.id, after)),
      heartbeat: async () => {
        await ctx.fork().nativeUpdate(Run, fence, { heartbeatAt: ctx.clock.now() });
      },
      finish: async (s: RunState) => {
        const close = await this.credits.close(run.reservationId, run.reservedCredits, s);
        const now = ctx.clock.now();
        const durationMs = now.getTime() - s.startedAt;
        // run_complete is stored with the final record and published once both are; the credits
        // are settled (or released) in the same transaction.
        sink.emitStored('run_complete', completion(s, durationMs));
        const final = { cursor: s.cursor, sessions: s.sessions, ctx: s.ctx, usage: s.usage, status: s.status, output: s.output ?? null, error: s.error, timedOut: s.timedOut, finishedAt: now, durationMs, updatedAt: now };
        const changed = await sink.flushWith(ctx.store.finishWork(fence, final, this.credits.settlement(close, s, run.reservedCredits)), (count) => count > 0);
        if (!changed) throw new RunSuperseded();
        await this.credits.chargeOverflow(close, s);
        persistence.durationMs = durationMs;
        await blocksStored(s);
      },
    };
    return persistence;
  }

  /**
   * Ends a run that is not executing (queued, waiting, or lost with no attempts left): takes it
   * over with a new attempt number, emits `run_error` and `run_complete`, releases its credits.
   */
  async endWithoutEngine(run: Run, status: 'cancelled' | 'failed'): Promise<void> {
    const { ctx } = this;
    const em = ctx.fork();
    const attempt = run.attempt + 1;
    const claimed = await em.nativeUpdate(Run, { id: run.id, attempt: run.attempt }, { attempt });
    if (!claimed) return;
    const fresh = await em.findOneOrFail(Run, { id: run.id }, { refresh: true });
    // Another attempt took the run over since the claim (an executor ending the same cancelled
    // run): that attempt ends it; going on would end it under that attempt's number too.
    if (fresh.attempt !== attempt || terminalRunStatuses.has(fresh.status)) return;
    const state = this.stateOf(fresh);
    const failure = status === 'cancelled' ? runFailure.cancelled : runFailure.workerLost;
    // Every event of this ending is stored and published only with its final record (one
    // transaction, fenced by the attempt): when another attempt took the run over meanwhile (a
    // cancel racing the continuation of a resume, both ending it), nothing of this one reaches the
    // log or a reader. So its numbers need no reservation before use (no number of it is ever
    // seen unless stored), and the other ending continues right after the run's last stored event.
    // (Stored without the record, its events took numbers the other ending then stored its own
    // under: that final write failed and the run stayed queued. Reserved, they left a gap.)
    const sink = StoredEventSink.reserved(ctx.store, ctx.pubsub, fresh, ctx.config.flushIntervalMs);
    const persistence = this.persistence(fresh, sink);
    if (state.fresh) sink.emitStored('run_start', { runId: run.id, documentId: run.documentId });
    for (const session of state.sessions) {
      if (session.status === 'running' || session.status === 'waiting') {
        // Its block_start went out: the block ends on the stream too, as a block the engine stopped does.
        session.status = 'failed';
        session.error = failure;
        const where = whereOf(session);
        sink.emitStored('block_error', { blockId: session.blockId, error: failure.message, code: failure.code, ...where });
        sink.emitStored('block_end', { blockId: session.blockId, ...where });
      }
    }
    state.status = status;
    state.error = failure;
    state.waiting = null;
    state.output = outputOf(state);
    sink.emitStored('run_error', { runId: run.id, error: failure.code, message: failure.message });
    try {
      await persistence.finish(state, sink);
    } catch (error) {
      // Another ending took the run over meanwhile (a cancel racing the continuation of a resume,
      // both ending the same queued run): its events and final record stand, nothing of this one
      // was stored (the final write and its events are one transaction).
      await sink.close().catch(() => undefined);
      const now = await ctx.fork().findOne(Run, { id: run.id }, { fields: ['attempt'] });
      if (error instanceof RunSuperseded || (now && now.attempt !== fresh.attempt)) return;
      throw error;
    }
    await sink.close();
    await ctx.fork().nativeUpdate(Run, { id: run.id, attempt: fresh.attempt }, { seqCeiling: sink.lastSeq });
    await this.notifyEnd(fresh, state, ctx.clock.nowMs() - state.startedAt);
  }

  /** Fires `run.finished` or `run.waiting` for a run that ended or paused with `state`. */
  async notifyEnd(run: Run, state: RunState, durationMs: number): Promise<void> {
    const subject = subjectOf(run);
    if (state.status === 'waiting' && state.waiting) await notify(this.ctx, 'run.waiting', { ...subject, ...state.waiting });
    else if (state.status === 'completed' || state.status === 'failed' || state.status === 'timed_out' || state.status === 'cancelled') {
      await notify(this.ctx, 'run.finished', { ...subject, status: state.status, output: state.output ?? null, error: state.error, usage: state.usage, durationMs });
    }
  }
}
