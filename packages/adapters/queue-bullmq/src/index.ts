import { Queue, WaitingError, Worker, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { TrellisError, type RunJob, type RunJobHandler, type RunQueue } from '@trellis/core';

export interface BullMqRunQueueOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://...` (TLS). Default `redis://127.0.0.1:6379`. */
  url?: string;
  /**
   * Put in front of every Redis key of the queue (BullMQ's `prefix`), so several deployments (or
   * test runs) can share one Redis. Default `trellis`.
   */
  prefix?: string;
  /** Name of the queue under the prefix. Default `runs`. */
  queueName?: string;
  /** Runs one worker process executes at the same time. Default 4. */
  concurrency?: number;
  /**
   * How long a worker's hold on a run lasts without renewal (renewed every half of it while the
   * handler runs). A worker that dies stops renewing; its run is found by the next stalled check
   * after the hold expired. Default 30,000 ms.
   */
  lockDurationMs?: number;
  /** How often workers look for runs whose worker died. Default 30,000 ms. */
  stalledIntervalMs?: number;
  /**
   * How many times a run whose worker died is handed to a worker again. When it would be handed
   * out once more than this, the next worker calls the handler with an already aborted signal
   * whose reason is a `TrellisError` coded `run_worker_lost`, so the runtime fails the run
   * instead of continuing it. Default 1.
   */
  maxStalledCount?: number;
  /**
   * `close()` waits this long for running handlers, then aborts their signals (reason coded
   * `queue_closing`) and puts their runs back in the queue for another worker. Default 30,000 ms.
   */
  closeGraceMs?: number;
  /** Further ioredis options (TLS, timeouts). `maxRetriesPerRequest` is forced to null, as BullMQ requires. */
  redis?: RedisOptions;
  /** Told about connection problems and about handlers that threw (their run is not retried). */
  onError?: (error: Error) => void;
}

/** BullMQ's highest priority number (lowest priority). */
const MAX_PRIORITY = 2_097_151;
/** A team's count of outstanding runs expires after this long without change, so drift heals. */
const TEAM_COUNT_TTL_SECONDS = 3_600;
const JOB_NAME = 'run';

/**
 * The RunQueue port on BullMQ 5 over Redis: host processes `enqueue`, `trellis worker` processes
 * `process`. Each run is one BullMQ job whose id is the run id:
 *
 * - `enqueue` of a run that is waiting in the queue is a no-op. Of a run that is executing, it
 *   asks for one more execution after the current one ends (the job goes back to the queue
 *   instead of completing), so a continuation enqueued while the previous part is still finishing
 *   is never lost; the handler is idempotent by contract. Finished jobs are removed, so the
 *   run's id can be enqueued again (resume after an ask).
 * - A worker that dies mid-run (`kill -9`) stops renewing its lock; after `lockDurationMs` the
 *   next stalled check (`stalledIntervalMs`) of any live worker puts the run back in the queue,
 *   at most `maxStalledCount` times (see that option for what happens next).
 * - A handler that throws is reported to `onError`; its run is not retried (the runtime records
 *   its own failures).
 * - Fairness between teams: BullMQ's groups are a paid (Pro) feature, so this adapter uses job
 *   priorities instead. Each team has a count of its outstanding runs in Redis; a new run gets
 *   the priority "its team's count" (1 for a team with nothing outstanding), and workers take the
 *   lowest number first, first in first out within a number. A team's n-th outstanding run thus
 *   waits behind every other team's first n-1: one team's burst cannot starve another.
 *
 * ```ts
 * const queue = new BullMqRunQueue({ url: 'redis://10.0.0.5:6379', concurrency: 8 });
 * createHost({ adapters: [provide(runQueueServiceIdentifier, queue)] });
 * ```
 */
export class BullMqRunQueue implements RunQueue {
  private readonly prefix: string;
  private readonly queueName: string;
  private readonly concurrency: number;
  private readonly lockDurationMs: number;
  private readonly stalledIntervalMs: number;
  private readonly maxStalledCount: number;
  private readonly closeGraceMs: number;
  private readonly onError: (error: Error) => void;
  private readonly connection: Redis;
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private readonly running = new Map<string, AbortController>();
  private closing: Promise<void> | undefined;
  /** Set when `close` gave up waiting: aborted runs go back to the queue. */
  private shuttingDown = false;

  /** Checks options before anything connects; throws with the offending field named. */
  static validateOptions(options: BullMqRunQueueOptions): void {
    if (options.url !== undefined) {
      let url: URL;
      try {
        url = new URL(options.url);
      } catch {
        throw new Error(`BullMqRunQueue: url "${options.url}" is not a URL (expected redis://host:port).`);
      }
      if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
        throw new Error(`BullMqRunQueue: url must start with redis:// or rediss://, got ${url.protocol}//.`);
      }
    }
    for (const name of ['prefix', 'queueName'] as const) {
      const value = options[name];
      if (value !== undefined && (typeof value !== 'string' || !/^[\w.-]{1,100}$/.test(value))) {
        throw new Error(`BullMqRunQueue: ${name} must be 1 to 100 letters, digits, "_", "." or "-".`);
      }
    }
    const integer = (name: keyof BullMqRunQueueOptions, min: number) => {
      const value = options[name];
      if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)) {
        throw new Error(`BullMqRunQueue: ${name} must be an integer of at least ${min}, got ${String(value)}.`);
      }
    };
    integer('concurrency', 1);
    integer('lockDurationMs', 100);
    integer('stalledIntervalMs', 100);
    integer('maxStalledCount', 0);
    integer('closeGraceMs', 0);
  }

  constructor(options: BullMqRunQueueOptions = {}) {
    BullMqRunQueue.validateOptions(options);
    this.prefix = options.prefix ?? 'trellis';
    this.queueName = options.queueName ?? 'runs';
    this.concurrency = options.concurrency ?? 4;
    this.lockDurationMs = options.lockDurationMs ?? 30_000;
    this.stalledIntervalMs = options.stalledIntervalMs ?? 30_000;
    this.maxStalledCount = options.maxStalledCount ?? 1;
    this.closeGraceMs = options.closeGraceMs ?? 30_000;
    this.onError = options.onError ?? (() => undefined);
    this.connection = new Redis(options.url ?? 'redis://127.0.0.1:6379', {
      ...options.redis,
      maxRetriesPerRequest: null,
      connectionName: 'trellis-runs',
    });
    this.connection.on('error', this.onError);
    this.queue = new Queue(this.queueName, { connection: this.connection, prefix: this.prefix });
    this.queue.on('error', this.onError);
  }

  async enqueue(job: RunJob): Promise<void> {
    if (this.closing) throw new Error('BullMqRunQueue is closed.');
    if (typeof job.runId !== 'string' || job.runId.length === 0 || job.runId.includes(':')) {
      throw new Error('BullMqRunQueue: runId must be a non-empty string without ":".');
    }
    if (typeof job.teamId !== 'string' || job.teamId.length === 0) throw new Error('BullMqRunQueue: teamId must be a non-empty string.');
    const state = await this.queue.getJobState(job.runId);
    if (state === 'waiting' || state === 'prioritized' || state === 'delayed' || state === 'waiting-children') return;
    if (state === 'active') {
      // Executing: ask for one more execution. Whichever side takes the flag (this one if the
      // job finished in between, the worker if it is still running) acts on it, exactly once.
      await this.connection.set(this.rerunKey(job.runId), '1', 'EX', TEAM_COUNT_TTL_SECONDS);
      if ((await this.queue.getJobState(job.runId)) === 'active') return;
      if ((await this.connection.getdel(this.rerunKey(job.runId))) === null) return;
    }
    await this.add(job);
  }

  async process(handler: RunJobHandler): Promise<void> {
    if (this.closing) throw new Error('BullMqRunQueue is closed.');
    if (this.worker) throw new Error('BullMqRunQueue: process() was already called.');
    const worker = new Worker<RunJob>(this.queueName, (job, token, cancelled) => this.execute(handler, job, token, cancelled), {
      connection: this.connection,
      prefix: this.prefix,
      concurrency: this.concurrency,
      lockDuration: this.lockDurationMs,
      stalledInterval: this.stalledIntervalMs,
      // One more than the option: the extra hand-out tells the handler that the queue gave up.
      maxStalledCount: this.maxStalledCount + 1,
      autorun: false,
    });
    worker.on('error', this.onError);
    this.worker = worker;
    void worker.run().catch(this.onError);
    await worker.waitUntilReady();
  }

  async close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const worker = this.worker;
    if (worker) {
      const graceful = worker.close();
      const settled = await Promise.race([graceful.then(() => true), delay(this.closeGraceMs).then(() => false)]);
      if (!settled) {
        this.shuttingDown = true;
        for (const controller of this.running.values()) {
          controller.abort(new TrellisError('unavailable', 'queue_closing', 'The worker is shutting down; the run goes back to the queue.'));
        }
        // Aborted handlers should return at once; a handler that ignores its signal is left behind.
        if (!(await Promise.race([graceful.then(() => true), delay(5_000).then(() => false)]))) await worker.close(true);
      }
    }
    await this.queue.close();
    await this.connection.quit().catch(() => undefined);
  }

  private async execute(handler: RunJobHandler, job: Job<RunJob>, token: string | undefined, cancelled: AbortSignal | undefined): Promise<void> {
    const run: RunJob = { runId: job.data.runId, teamId: job.data.teamId };
    const controller = new AbortController();
    const id = job.id ?? run.runId;
    this.running.set(id, controller);
    cancelled?.addEventListener('abort', () => controller.abort(cancelled.reason), { once: true });
    if (job.stalledCounter > this.maxStalledCount) {
      controller.abort(
        new TrellisError('unavailable', 'run_worker_lost', `The worker executing this run stopped ${job.stalledCounter} times before finishing it; the queue gave up on the run.`, { expose: true }),
      );
    }
    try {
      await handler(run, controller.signal);
    } catch (error) {
      if (!this.shuttingDown) this.onError(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.running.delete(id);
    }
    // Back to the queue: interrupted by shutdown, or enqueued again while it executed.
    const again = (this.shuttingDown && controller.signal.aborted) || (await this.connection.getdel(this.rerunKey(run.runId))) !== null;
    if (again) {
      await job.moveToWait(token);
      throw new WaitingError();
    }
    await this.finished(run.teamId);
  }

  private async add(job: RunJob): Promise<void> {
    const outstanding = await this.connection.multi().incr(this.teamKey(job.teamId)).expire(this.teamKey(job.teamId), TEAM_COUNT_TTL_SECONDS).exec();
    const count = Number(outstanding?.[0]?.[1] ?? 1);
    await this.queue.add(JOB_NAME, { runId: job.runId, teamId: job.teamId }, {
      jobId: job.runId,
      priority: Math.min(Math.max(count, 1), MAX_PRIORITY),
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 1,
    });
  }

  /** One of the team's outstanding runs finished: its next runs move up. */
  private async finished(teamId: string): Promise<void> {
    const key = this.teamKey(teamId);
    const left = await this.connection.decr(key);
    if (left <= 0) await this.connection.del(key);
  }

  private teamKey(teamId: string): string {
    return `${this.prefix}:${this.queueName}:team:${teamId}`;
  }

  private rerunKey(runId: string): string {
    return `${this.prefix}:${this.queueName}:rerun:${runId}`;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
export { BullMqScheduleTimer, type BullMqScheduleTimerOptions } from './schedule-timer.js';
