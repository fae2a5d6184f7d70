import type { RunMetrics } from './run-metrics.js';
import type { EntityManager } from '@mikro-orm/core';
import type { Logger } from 'pino';
import type { Hooks, TrellisHooks } from '../../../kernel/hooks.js';
import type { Clock } from '../../../ports/clock.js';
import type { PreparedStatements } from '../../../ports/database.js';
import type { Ids } from '../../../ports/ids.js';
import type { PubSub } from '../../../ports/pubsub.js';
import type { RunQueue } from '../../../ports/run-queue.js';
import type { RunStore } from '../../../ports/run-store.js';
import type { Run, RunStatus } from '../entities/run.entity.js';
import type { RunControlChannel } from './run-control-channel.js';
import type { RunHookSubject } from '../hooks.js';
import '../hooks.js';
import type { BlockKinds } from '../blocks/registry.js';
import type { RunsConfig } from '../runs.config.js';
import type { RunEngine } from './run-engine.js';
import type { RunResult } from './run-result.js';

/** A run this process executes: its result, handed to a waiting `stream: false` caller from memory (null: read it from the store). */
export interface LocalRun {
  promise: Promise<RunResult | null>;
  resolve(result: RunResult | null): void;
  /** The run as it was stored (queued, attempt 0): its first execution here needs not read it back. */
  stored?: Run;
  /** The run was stored already claimed for its first attempt, in a slot of the in-process queue. */
  claimed?: boolean;
}

/** What the parts of the run service share: their ports, settings, and the runs this process executes. */
export interface RunContext {
  readonly config: RunsConfig;
  readonly fork: () => EntityManager;
  readonly pubsub: PubSub;
  readonly queue: RunQueue;
  readonly ids: Ids;
  readonly clock: Clock;
  readonly log: Logger;
  readonly sql: PreparedStatements;
  readonly hooks: Hooks;
  /** Where a cancel reaches the run it is for (see `RunControlChannel`). */
  readonly control: RunControlChannel;
  /** Where runs are stored (the database adapter's: see `DatabaseAdapter.runStore`). */
  readonly store: RunStore;
  readonly engine: RunEngine;
  /** The registered block kinds (what a workflow is parsed and checked against). */
  readonly kinds: BlockKinds;
  /** Runs queued on, or executing in, this process (a queue that executes here), by id. */
  readonly local: Map<string, LocalRun>;
  /** This process consumes the run queue. */
  consuming: boolean;
  /** The runs' Prometheus metrics (absent when the kernel keeps none). */
  readonly metrics?: RunMetrics;
}

export const activeStatuses: RunStatus[] = ['queued', 'running'];

/** Which run a run hook is about. */
export const subjectOf = (run: Run): RunHookSubject => ({
  runId: run.id,
  documentId: run.documentId,
  projectId: run.projectId,
  teamId: run.teamId,
  userId: run.userId,
  source: run.source,
  version: run.version,
});

type RunHookName = 'run.started' | 'run.blockFinished' | 'run.waiting' | 'run.finished';

/** Runs a hook's handlers after the fact: a failing handler is logged and changes nothing. */
export async function notify<K extends RunHookName>(ctx: RunContext, name: K, payload: TrellisHooks[K]): Promise<void> {
  try {
    await ctx.hooks.emit(name, payload);
  } catch (error) {
    ctx.log.error({ err: error, hook: name, runId: payload.runId }, 'a run hook failed');
  }
}

/** The local record of a run this process executes (created once). */
export function localRun(ctx: RunContext, runId: string): LocalRun {
  let local = ctx.local.get(runId);
  if (!local) {
    let resolve!: (result: RunResult | null) => void;
    const promise = new Promise<RunResult | null>((r) => (resolve = r));
    ctx.local.set(runId, (local = { promise, resolve }));
  }
  return local;
}
