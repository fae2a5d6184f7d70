import { Queue, Worker, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { TrellisError, type ScheduleDueHandler, type ScheduleTimer, type ScheduleTimerEntry } from '@trellis/core';

export interface BullMqScheduleTimerOptions {
  /** `redis://...` or `rediss://...`. Default `redis://127.0.0.1:6379`. */
  url?: string;
  /** Put in front of every Redis key (BullMQ's `prefix`). Default `trellis`. */
  prefix?: string;
  /** Name of the queue under the prefix. Default `schedules`. */
  queueName?: string;
  /** Further ioredis options; `maxRetriesPerRequest` is forced to null, as BullMQ requires. */
  redis?: RedisOptions;
  /** Told about connection problems and handlers that threw. */
  onError?: (error: Error) => void;
}

interface DueJob {
  scheduleId: string;
}

/**
 * The ScheduleTimer port on BullMQ job schedulers: one scheduler per schedule
 * (`upsertJobScheduler(id, { pattern, tz })`), which keeps one delayed job per due time with the
 * id `repeat:<scheduleId>:<due time in ms>`; every process that `listen`s runs a worker, and BullMQ
 * hands each job to one of them. The due time is read from the job's id, so a job consumed late
 * (no worker was running) reports when it fell due, not when it was taken.
 */
export class BullMqScheduleTimer implements ScheduleTimer {
  private readonly connection: Redis;
  private readonly queue: Queue<DueJob>;
  private readonly queueName: string;
  private readonly prefix: string;
  private readonly onError: (error: Error) => void;
  private worker: Worker<DueJob> | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: BullMqScheduleTimerOptions = {}) {
    this.prefix = options.prefix ?? 'trellis';
    this.queueName = options.queueName ?? 'schedules';
    for (const [name, value] of [['prefix', this.prefix], ['queueName', this.queueName]] as const) {
      if (!/^[\w.-]{1,100}$/.test(value)) throw new Error(`BullMqScheduleTimer: ${name} must be 1 to 100 letters, digits, "_", "." or "-".`);
    }
    this.onError = options.onError ?? (() => undefined);
    this.connection = new Redis(options.url ?? 'redis://127.0.0.1:6379', { ...options.redis, maxRetriesPerRequest: null, connectionName: 'trellis-schedules' });
    this.connection.on('error', this.onError);
    this.queue = new Queue<DueJob>(this.queueName, { connection: this.connection, prefix: this.prefix, defaultJobOptions: { removeOnComplete: true, removeOnFail: 1_000 } });
    this.queue.on('error', this.onError);
  }

  async upsert(entry: ScheduleTimerEntry): Promise<void> {
    try {
      await this.queue.upsertJobScheduler(entry.id, { pattern: entry.cron, tz: entry.timezone }, { name: 'due', data: { scheduleId: entry.id } });
    } catch (error) {
      // cron-parser (BullMQ's) refusing an expression the module accepted.
      const message = error instanceof Error ? error.message : String(error);
      if (/cron|pattern|invalid|validation/i.test(message) && !/ECONN|closed|timeout/i.test(message)) {
        throw new TrellisError('validation', 'invalid_cron', `cron: the job scheduler cannot use it (${message})`, { details: [{ field: 'cron', constraint: 'cron', message }] });
      }
      throw error;
    }
  }

  async remove(scheduleId: string): Promise<void> {
    await this.queue.removeJobScheduler(scheduleId);
  }

  /** The ids of the schedules that have a job scheduler (for checks and operators). */
  async scheduled(): Promise<string[]> {
    return (await this.queue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.key);
  }

  async listen(handler: ScheduleDueHandler): Promise<void> {
    if (this.worker) throw new Error('BullMqScheduleTimer: listen() was already called.');
    const worker = new Worker<DueJob>(this.queueName, (job) => handler(job.data.scheduleId, dueTimeOf(job)), {
      connection: this.connection,
      prefix: this.prefix,
      concurrency: 8,
      autorun: false,
    });
    worker.on('error', this.onError);
    worker.on('failed', (_job, error) => this.onError(error));
    this.worker = worker;
    void worker.run().catch(this.onError);
    await worker.waitUntilReady();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.worker?.close();
      await this.queue.close();
      await this.connection.quit().catch(() => undefined);
    })();
    return this.closing;
  }
}

/** When a scheduler's job fell due: the milliseconds its id ends with, else its creation plus delay. */
function dueTimeOf(job: Job<DueJob>): Date {
  const match = /:(\d+)$/.exec(job.id ?? '');
  if (match) return new Date(Number(match[1]));
  return new Date(job.timestamp + (job.opts.delay ?? 0));
}
