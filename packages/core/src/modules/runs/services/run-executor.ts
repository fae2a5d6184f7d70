import { terminalRunStatuses } from '../entities/run.entity.js';
import { readRun } from '../queries.js';
import type { RunJob } from '../../../ports/run-queue.js';
import { activeStatuses, notify, subjectOf, type RunContext } from './run-context.js';
import { RunSuperseded, type StopReason } from './run-engine.js';
import type { RunRecorder } from './run-recorder.js';
import { runResult, type RunResult } from './run-result.js';
import { StoredEventSink, SEQ_BLOCK } from './stored-event-sink.js';
import { modelCallFrame } from '../../ai/index.js';
import { endedBlocks } from './run-metrics.js';
import { runSpan } from './run-span.js';
import type { RunBudgets } from './run-budget.js';

/** Executing queued runs: the RunQueue's handler claims an attempt and runs the engine over it. */
export class RunExecutor {
  constructor(
    private readonly ctx: RunContext,
    private readonly recorder: RunRecorder,
    private readonly budgets?: RunBudgets,
  ) {}

  /** Starts this process consuming the run queue. */
  async consume(): Promise<void> {
    this.ctx.queue.onDropped?.((job) => this.ctx.local.get(job.runId)?.resolve(null));
    await this.ctx.queue.process((job, signal) => this.executeJob(job, signal));
    this.ctx.consuming = true;
  }

  /** Executes (or continues) one queued run. Safe to call again for an interrupted run. */
  async executeJob(job: RunJob, signal: AbortSignal): Promise<void> {
    const local = this.ctx.local.get(job.runId);
    let result: RunResult | null = null;
    try {
      result = await this.execute(job, signal);
    } finally {
      if (local) {
        // A `stream: false` caller already waits on the promise (it asks right after the start,
        // long before a run ends); a later one reads the stored run.
        local.resolve(result);
        this.ctx.local.delete(job.runId);
      }
    }
  }

  /** Executes one queued run; its result when it ended or paused here (null when it did not run, or stopped unfinished). */
  private async execute(job: RunJob, signal: AbortSignal): Promise<RunResult | null> {
    const local = this.ctx.local.get(job.runId);
    const stored = local?.stored;
    // Stored already claimed for this first attempt (see `start`): no claim, no read back.
    const preclaimed = local?.claimed === true && stored !== undefined && stored.attempt === 1;
    // Otherwise the whole record, in one prepared read (not the ORM's read and hydration).
    const run = preclaimed || (stored && stored.attempt === 0) ? stored! : await readRun(this.ctx.sql, job.runId);
    if (!run || !activeStatuses.includes(run.status)) return null;
    if (signal.aborted) {
      // The queue gave up on the run (its workers kept dying): fail it rather than continue.
      const reason = signal.reason as { code?: string } | undefined;
      if (reason?.code === 'run_worker_lost') await this.recorder.endWithoutEngine(run, 'failed');
      return null;
    }
    if (!preclaimed) {
      if (run.cancelRequested) return this.recorder.endWithoutEngine(run, 'cancelled').then(() => null);
      if (run.attempt >= this.ctx.config.maxAttempts) return this.recorder.endWithoutEngine(run, 'failed').then(() => null);
      const now = this.ctx.clock.now();
      const attempt = run.attempt + 1;
      const startedAt = run.startedAt ?? now;
      const deadlineAt = run.deadlineAt ?? new Date(now.getTime() + run.timeoutSeconds * 1000);
      // The claim also reserves the attempt's sequence numbers (see StoredEventSink.reserved).
      const claimed = await this.ctx.store.claim({ id: run.id, attempt: run.attempt }, { startedAt, deadlineAt, now, seqCeiling: run.seqCeiling + SEQ_BLOCK });
      if (!claimed) return null;
      Object.assign(run, { attempt, startedAt, deadlineAt });
    }
    if (run.attempt === 1) await notify(this.ctx, 'run.started', subjectOf(run));
    const state = this.recorder.stateOf(run);
    const sink = StoredEventSink.reserved(this.ctx.store, this.ctx.pubsub, run, this.ctx.config.flushIntervalMs);
    const cancel = new AbortController();
    let why: StopReason = 'shutdown';
    const unsubscribe = await this.ctx.control.listen(run.id, () => {
      why = 'cancel';
      cancel.abort();
    });
    const onShutdown = () => cancel.abort();
    signal.addEventListener('abort', onShutdown);
    const persistence = this.recorder.persistence(run, sink);
    try {
      const before = endedBlocks(state);
      // Model calls made inside are recorded for this run's attempt and charged to its hold; the
      // run's span is the parent of their GenAI spans (docs/observability.md).
      const modelCalls = modelCallFrame({ runId: run.id, attempt: run.attempt, reservationId: run.reservationId, teamId: run.teamId ?? null, userId: run.userId });
      await runSpan(run, () => this.ctx.engine.execute(state, sink, persistence, { signal: cancel.signal, stopReason: () => why, heartbeatMs: this.ctx.config.heartbeatSeconds * 1000, modelCalls, budget: this.budgets?.guard(run) }), state);
      await sink.close();
      // A run that goes on later (waiting for an answer, or stopped by a shutdown) numbers its
      // events right after the last stored one; a finished run keeps its reservation.
      if (!terminalRunStatuses.has(state.status)) await this.ctx.store.setSeqCeiling({ id: run.id, attempt: run.attempt }, sink.lastSeq);
      if (state.status === 'running' || state.status === 'queued') return null;
      const durationMs = persistence.durationMs ?? this.ctx.clock.nowMs() - state.startedAt;
      this.ctx.metrics?.ended(state, durationMs, before);
      await this.recorder.notifyEnd(run, state, durationMs);
      const waiting = state.status === 'waiting';
      return runResult({ ...state, durationMs, output: waiting ? run.output : state.output, waiting: waiting ? state.waiting : null });
    } catch (error) {
      if (!(error instanceof RunSuperseded)) this.ctx.log.error({ err: error, runId: run.id }, 'run execution failed');
      return null;
    } finally {
      signal.removeEventListener('abort', onShutdown);
      await sink.close().catch(() => undefined);
      await unsubscribe();
    }
  }
}
