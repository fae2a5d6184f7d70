import type { EntityManager } from '@mikro-orm/core';
import type { Counter, Histogram } from 'prom-client';
import type { TrellisMetrics } from '../../../kernel/observability/metrics.js';
import { Run } from '../entities/run.entity.js';
import type { RunState } from './run-state.js';

/** Run and block durations, in seconds: 10 ms to 10 minutes. */
const runBuckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The runs' Prometheus metrics: runs by final status, run and block durations (by block kind),
 * and the queue's depth (runs waiting for a worker, read from the run records at each scrape, so
 * every process reports the same figure).
 */
export class RunMetrics {
  private readonly runs: Counter<'status'>;
  private readonly runDuration: Histogram<'status'>;
  private readonly blockDuration: Histogram<'type' | 'status'>;

  constructor(metrics: TrellisMetrics, fork: () => EntityManager) {
    this.runs = metrics.counter({ name: 'trellis_runs_total', help: 'Runs that ended or paused in this process, by status (completed, failed, timed_out, cancelled, waiting).', labelNames: ['status'] });
    this.runDuration = metrics.histogram({ name: 'trellis_run_duration_seconds', help: 'Run durations from start to end (or pause), by status.', labelNames: ['status'], buckets: runBuckets });
    this.blockDuration = metrics.histogram({ name: 'trellis_block_duration_seconds', help: 'Block durations, by block node type (`llmBlock`, `toolBlock`, ...) and status (completed, failed).', labelNames: ['type', 'status'], buckets: runBuckets });
    metrics.gauge({
      name: 'trellis_run_queue_depth',
      help: 'Runs waiting for a worker (queued) and being executed (running), from the run records.',
      labelNames: ['state'],
      async collect() {
        try {
          const em = fork();
          const [queued, running] = await Promise.all([em.count(Run, { status: 'queued' }), em.count(Run, { status: 'running' })]);
          this.set({ state: 'queued' }, queued);
          this.set({ state: 'running' }, running);
        } catch {
          // The database is away: the scrape goes on without this figure.
        }
      },
    });
  }

  /** Counts a run that ended (or paused) in this process with `state`, and the blocks it ran here. */
  ended(state: RunState, durationMs: number, blocksBefore: ReadonlySet<string>): void {
    this.runs.inc({ status: state.status });
    this.runDuration.observe({ status: state.status }, durationMs / 1000);
    for (const session of state.sessions) {
      if (blocksBefore.has(session.blockId) || session.durationMs === undefined) continue;
      if (session.status !== 'completed' && session.status !== 'failed') continue;
      this.blockDuration.observe({ type: session.blockType, status: session.status }, session.durationMs / 1000);
    }
  }
}

/** The blocks of `state` that ended before this attempt (not counted again). */
export const endedBlocks = (state: RunState): Set<string> => new Set(state.sessions.filter((s) => s.status === 'completed' || s.status === 'failed').map((s) => s.blockId));
