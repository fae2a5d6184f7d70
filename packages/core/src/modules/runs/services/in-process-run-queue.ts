import type { RunJob, RunJobHandler, RunQueue, RunSlot } from '../../../ports/run-queue.js';
import { settledBy } from '../../../kernel/settled-by.js';

export interface InProcessRunQueueOptions {
  /** Jobs executed at once. */
  concurrency: number;
  /**
   * Jobs of one team executed at once: its further jobs wait while other teams' take the free
   * slots. Default: three quarters of `concurrency` (at least 1).
   */
  teamConcurrency?: number;
  /** How long `close` waits for running jobs before it aborts them. */
  closeGraceMs?: number;
}

/** A slot of the in-process queue taken for one job (see `InProcessRunQueue.claim`). */
export type SlotClaim = RunSlot;

/**
 * The embedded RunQueue: jobs wait in memory and run in this process with bounded concurrency.
 * Each team has its own FIFO line and the lines take turns (round robin), and a team executes at
 * most `teamConcurrency` jobs at once, so one team's burst (or its runs that never end) cannot
 * hold back another team's runs. Jobs queued when the process stops are not kept; the
 * runs module finds such runs again (queued or running without a heartbeat) and enqueues them.
 */
export class InProcessRunQueue implements RunQueue {
  private readonly lines = new Map<string, RunJob[]>();
  /** Teams in round-robin order (a team is here while its line is not empty). */
  private readonly turn: string[] = [];
  private readonly known = new Set<string>();
  /** Runs enqueued again while they executed: each executes once more when its execution ends. */
  private readonly again = new Map<string, RunJob>();
  private readonly running = new Map<string, { promise: Promise<void>; abort: AbortController; teamId: string }>();
  /** Jobs executing, by team. */
  private readonly busy = new Map<string, number>();
  private readonly teamConcurrency: number;
  private handler: RunJobHandler | null = null;
  private closed = false;
  private readonly dropListeners: ((job: RunJob) => void)[] = [];

  constructor(private readonly options: InProcessRunQueueOptions) {
    this.teamConcurrency = Math.min(options.concurrency, options.teamConcurrency ?? Math.max(1, Math.floor((options.concurrency * 3) / 4)));
  }

  private below(teamId: string): boolean {
    return (this.busy.get(teamId) ?? 0) < this.teamConcurrency;
  }

  private occupy(runId: string, teamId: string, entry: { promise: Promise<void>; abort: AbortController; teamId: string }): void {
    this.running.set(runId, entry);
    this.busy.set(teamId, (this.busy.get(teamId) ?? 0) + 1);
  }

  /** Called for each job this queue will not run (enqueued after, or still waiting at, `close`). */
  onDropped(listener: (job: RunJob) => void): void {
    this.dropListeners.push(listener);
  }

  private drop(job: RunJob): void {
    for (const listener of this.dropListeners) listener(job);
  }

  async enqueue(job: RunJob): Promise<void> {
    if (this.closed) return this.drop(job);
    if (this.running.has(job.runId)) {
      // Executing (e.g. a resume that came while the attempt that paused was still ending): the
      // port's contract asks for one more execution after this one, however often it is enqueued.
      this.again.set(job.runId, job);
      return;
    }
    if (this.known.has(job.runId)) return;
    this.known.add(job.runId);
    let line = this.lines.get(job.teamId);
    if (!line) {
      this.lines.set(job.teamId, (line = []));
      this.turn.push(job.teamId);
    }
    line.push(job);
    this.pump();
  }

  async process(handler: RunJobHandler): Promise<void> {
    this.handler = handler;
    this.pump();
  }

  /** Jobs waiting (not running). */
  get waiting(): number {
    let total = 0;
    for (const line of this.lines.values()) total += line.length;
    return total;
  }

  get active(): number {
    return this.running.size;
  }

  /** The next job: of the first team in turn below its share (which then goes to the back). */
  private take(): RunJob | undefined {
    const at = this.turn.findIndex((team) => this.below(team));
    if (at < 0) return undefined;
    const team = this.turn.splice(at, 1)[0]!;
    const line = this.lines.get(team)!;
    const job = line.shift()!;
    if (line.length) this.turn.push(team);
    else this.lines.delete(team);
    return job;
  }

  private pump(): void {
    if (!this.handler || this.closed) return;
    while (this.running.size < this.options.concurrency) {
      const job = this.take();
      if (!job) return;
      const abort = new AbortController();
      const entry = { promise: Promise.resolve(), abort, teamId: job.teamId };
      this.occupy(job.runId, job.teamId, entry);
      entry.promise = this.execute(this.handler, job, abort);
    }
  }

  private async execute(handler: RunJobHandler, job: RunJob, abort: AbortController): Promise<void> {
    try {
      await handler(job, abort.signal);
    } catch {
      // The handler records failures on the run itself.
    } finally {
      this.release(job.runId);
    }
  }

  /** A job's slot is free: the next job runs, the same run first if it was enqueued meanwhile. */
  private release(runId: string): void {
    const entry = this.running.get(runId);
    this.running.delete(runId);
    if (entry) {
      const count = (this.busy.get(entry.teamId) ?? 1) - 1;
      if (count > 0) this.busy.set(entry.teamId, count);
      else this.busy.delete(entry.teamId);
    }
    this.known.delete(runId);
    const again = this.again.get(runId);
    if (again) {
      this.again.delete(runId);
      void this.enqueue(again);
    }
    this.pump();
  }

  /**
   * Takes a free slot for a job that is about to exist (its run is being stored), when one is free
   * and no job that could run waits (so no team is passed over) and `teamId` is below its share:
   * the caller then `start`s the job in it at once, without a trip through the lines, or
   * `cancel`s the claim. Null when no slot is free, jobs wait, no handler runs jobs, or the queue
   * is closed. A `lent` claim (a sub-workflow's child, run in the slot its waiting parent holds)
   * is given a slot whatever the limits: queued behind other parents it could wait for ever.
   */
  claim(runId: string, teamId: string, options: { lent?: boolean } = {}): SlotClaim | null {
    if (!this.handler || this.closed || this.known.has(runId)) return null;
    if (!options.lent) {
      if (this.running.size >= this.options.concurrency) return null;
      if (!this.below(teamId) || this.lines.has(teamId) || this.turn.some((team) => this.below(team))) return null;
    }
    const abort = new AbortController();
    const entry = { promise: Promise.resolve(), abort, teamId };
    this.occupy(runId, teamId, entry);
    this.known.add(runId);
    let settled = false;
    const release = () => this.release(runId);
    return {
      start: (job) => {
        if (settled) return;
        settled = true;
        if (this.closed || !this.handler) {
          release();
          return this.drop(job);
        }
        entry.promise = this.execute(this.handler, job, abort);
      },
      cancel: () => {
        if (settled) return;
        settled = true;
        release();
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const line of this.lines.values()) for (const job of line) this.drop(job);
    this.lines.clear();
    this.turn.length = 0;
    for (const job of this.again.values()) this.drop(job);
    this.again.clear();
    const running = [...this.running.values()];
    if (!running.length) return;
    const all = Promise.allSettled(running.map((r) => r.promise));
    const grace = this.options.closeGraceMs ?? 5_000;
    if (!(await settledBy(all, Date.now() + grace))) {
      for (const r of running) r.abort.abort(new Error('The run queue is closing.'));
      await all;
    }
  }
}
