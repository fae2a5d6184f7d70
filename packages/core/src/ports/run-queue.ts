import type { ServiceIdentifier } from 'inversify';

/** One unit of queued work: execute (or continue) the run `runId`. */
export interface RunJob {
  runId: string;
  /** The team the run bills to; queues use it to share capacity fairly between teams. */
  teamId: string;
}

/**
 * Executes one job. It must be safe to call again for a run that was interrupted part-way (a
 * killed worker): the runtime continues from the run's last checkpoint, or fails the run.
 * `signal` aborts when the queue shuts down (reason: a `TrellisError` coded `queue_closing`; the
 * queue hands the run out again later) or gives up on the job. A queue that gives up on a run
 * whose consumers kept dying calls the handler once more with `signal` already aborted (reason
 * coded `run_worker_lost`): the runtime then fails the run instead of continuing it.
 */
export type RunJobHandler = (job: RunJob, signal: AbortSignal) => Promise<void>;

/**
 * The RunQueue port: where accepted runs wait to be executed, and who executes them.
 *
 * Contract:
 * - `enqueue` stores the job durably enough for the deployment (in process: memory; BullMQ:
 *   Redis) and returns without waiting for execution. Enqueueing a run id that is already queued
 *   is a no-op. Enqueueing one that is executing makes it execute once more after the current
 *   execution ends (however many times it was enqueued meanwhile), so a continuation enqueued
 *   while the previous part is still finishing is never lost.
 * - `process` makes this process a consumer: `handler` is called for queued jobs with bounded
 *   concurrency. Host processes of a scaled-out deployment accept runs and stream their events
 *   without calling `process`; `trellis worker` processes call it.
 * - A job whose consumer dies without finishing (crash, `kill -9`) is handed to a consumer again
 *   (at most the adapter's documented number of times), so no run stays executing forever.
 * - `close` stops taking new jobs, waits for running handlers up to the adapter's grace period,
 *   then aborts their signals.
 */
export interface RunQueue {
  enqueue(job: RunJob): Promise<void>;
  process(handler: RunJobHandler): Promise<void>;
  close(): Promise<void>;
  /**
   * Optional capability of a queue that executes jobs in the process that enqueues them (the
   * in-process queue): takes a free slot for `runId` now, so the caller can store the run already
   * claimed and start it in the slot without a round through the queue. Null when no slot is
   * free. A queue that has it also executes every job it is given in this process.
   *
   * `lent`: the job runs in a slot its caller holds and waits in (a sub-workflow's child, whose
   * parent block waits for it): the queue gives it a slot beyond its limits rather than make it
   * wait behind jobs that may be parents waiting for their own children.
   */
  claim?(runId: string, teamId: string, options?: { lent?: boolean }): RunSlot | null;
  /** Optional: called for each job the queue will not run (enqueued after, or still waiting at, `close`). */
  onDropped?(listener: (job: RunJob) => void): void;
}

/** A slot of a queue taken for one job (see `RunQueue.claim`). */
export interface RunSlot {
  /** Runs the job in the slot now. */
  start(job: RunJob): void;
  /** Gives the slot back (the job will not exist). */
  cancel(): void;
}

export const runQueueServiceIdentifier: ServiceIdentifier<RunQueue> = Symbol.for('@trellis/core/RunQueue');
