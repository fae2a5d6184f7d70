import type { EntityManager } from '@mikro-orm/core';
import { RunEvent } from '../entities/run-event.entity.js';
import { Run } from '../entities/run.entity.js';
import type { PubSub } from '../../../ports/pubsub.js';

/** One event of a run's stream: the spec's event name as `type`, its fields as `data`. */
export interface RunEventRecord {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

export const runEventsTopic = (runId: string) => `runs:events:${runId}`;
export const runControlTopic = (runId: string) => `runs:control:${runId}`;

/** Where an executing run's events go. */
export interface RunEventSink {
  emit(type: string, data: Record<string, unknown>): number;
  /** Resolves once every event emitted so far is stored. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Sequence numbers an attempt reserves at a time (persisted on the run before use). */
const SEQ_BLOCK = 10_000;

/**
 * The sink of a stored run: every event gets the next sequence number, is published at once on
 * the run's PubSub topic (the live tail of every reader in every process), and is appended to the
 * event log in batches (chunks at most `flushIntervalMs` late; callers flush before they go on
 * after any other event).
 *
 * Sequence numbers are reserved on the run (`seqCeiling`) before they are published, so a retry
 * after a lost worker starts above every number a reader could have seen.
 */
export class StoredEventSink implements RunEventSink {
  private next: number;
  private ceiling: number;
  private pending: RunEvent[] = [];
  private held: string[] = [];
  private reserving: Promise<void> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private failed: unknown = null;

  private constructor(
    private readonly fork: () => EntityManager,
    private readonly pubsub: PubSub,
    private readonly runId: string,
    private readonly attempt: number,
    start: number,
    private readonly flushMs: number,
  ) {
    this.next = start;
    this.ceiling = start;
  }

  /** A sink for attempt `attempt` of the run, continuing after the run's reserved numbers. */
  static async open(fork: () => EntityManager, pubsub: PubSub, run: Pick<Run, 'id' | 'seqCeiling' | 'attempt'>, flushMs: number): Promise<StoredEventSink> {
    const sink = new StoredEventSink(fork, pubsub, run.id, run.attempt, run.seqCeiling + 1, flushMs);
    await sink.reserve();
    return sink;
  }

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    this.pending.push(Object.assign(new RunEvent(), { runId: this.runId, seq, type, data, createdAt: new Date() }));
    const message = JSON.stringify({ seq, type, data });
    if (seq < this.ceiling && !this.held.length) void this.pubsub.publish(runEventsTopic(this.runId), message);
    else {
      this.held.push(message);
      void this.reserve();
    }
    if (!this.timer) this.timer = setTimeout(() => void this.flush().catch(() => undefined), this.flushMs);
    return seq;
  }

  private reserve(): Promise<void> {
    if (this.reserving) return this.reserving;
    this.reserving = (async () => {
      const ceiling = Math.max(this.ceiling, this.next) + SEQ_BLOCK;
      await this.fork().nativeUpdate(Run, { id: this.runId }, { seqCeiling: ceiling - 1 });
      this.ceiling = ceiling;
      const held = this.held;
      this.held = [];
      for (const message of held) void this.pubsub.publish(runEventsTopic(this.runId), message);
    })().finally(() => {
      this.reserving = null;
      if (this.held.length && this.next >= this.ceiling) void this.reserve();
    });
    return this.reserving;
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing.then(async () => {
      if (this.failed) throw this.failed;
      if (this.reserving) await this.reserving;
      if (!batch.length) return;
      try {
        const em = this.fork();
        for (let i = 0; i < batch.length; i += 500) await em.insertMany(RunEvent, batch.slice(i, i + 500));
      } catch (error) {
        this.failed = error;
        throw error;
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
  }

  get lastSeq(): number {
    return this.next - 1;
  }

  get attemptNumber(): number {
    return this.attempt;
  }
}

/** The sink of a debug run (content given in the request): events go to the request's stream only. */
export class LocalEventSink implements RunEventSink {
  private next = 1;
  private readonly queue: RunEventRecord[] = [];
  private wake: (() => void) | null = null;
  private closed = false;

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    this.queue.push({ seq, type, data });
    this.wake?.();
    return seq;
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }

  async *events(): AsyncGenerator<RunEventRecord> {
    for (;;) {
      while (this.queue.length) yield this.queue.shift()!;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }
}

export interface FollowOptions {
  /** End at `run_waiting` when the run is still waiting for an answer. */
  endWhenWaiting: boolean;
  /** How often the log is read again when nothing arrives live (lost PubSub messages, a dead worker). */
  pollMs?: number;
  /** How long a hole in the sequence may stay unfilled before the reader moves on. */
  gapWaitMs?: number;
  signal?: AbortSignal;
}

const PAGE = 1_000;

/**
 * Follows a run's event stream from just after `after`: the events of the log first, then the
 * live tail from PubSub, each sequence number exactly once and in order. A hole in the live
 * sequence (events published before they were stored, or a message PubSub dropped) is filled from
 * the log. The stream ends after `run_complete` (or `run_waiting`, see options).
 */
export async function* followRun(fork: () => EntityManager, pubsub: PubSub, runId: string, after: number, options: FollowOptions): AsyncGenerator<RunEventRecord> {
  const pollMs = options.pollMs ?? 1_000;
  const gapWaitMs = options.gapWaitMs ?? 3_000;
  const live: RunEventRecord[] = [];
  let wake: (() => void) | null = null;
  const unsubscribe = await pubsub.subscribe(runEventsTopic(runId), (message) => {
    live.push(JSON.parse(typeof message === 'string' ? message : Buffer.from(message).toString('utf8')) as RunEventRecord);
    wake?.();
  });
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  let last = after;
  const load = async (from: number, below?: number): Promise<RunEventRecord[]> => {
    const rows = await fork().find(
      RunEvent,
      { runId, seq: below === undefined ? { $gt: from } : { $gt: from, $lt: below } },
      { orderBy: { seq: 'asc' }, limit: PAGE, fields: ['seq', 'type', 'data'] },
    );
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: row.data }));
  };
  const ends = async (event: RunEventRecord): Promise<boolean> => {
    if (event.type === 'run_complete') return true;
    if (event.type === 'run_waiting' && options.endWhenWaiting) {
      const run = await fork().findOne(Run, { id: runId }, { fields: ['status', 'seqCeiling'] });
      return !run || run.status === 'waiting';
    }
    return false;
  };
  try {
    let quietPolls = 0;
    for (;;) {
      if (options.signal?.aborted) return;
      // The log after what was sent.
      let stored = await load(last);
      while (stored.length) {
        for (const event of stored) {
          yield event;
          last = event.seq;
          if (await ends(event)) return;
        }
        stored = stored.length === PAGE ? await load(last) : [];
      }
      // The live tail.
      let progressed = false;
      while (live.length) {
        const event = live.shift()!;
        if (event.seq <= last) continue;
        if (event.seq > last + 1) {
          const deadline = Date.now() + gapWaitMs;
          for (;;) {
            for (const missing of await load(last, event.seq)) {
              if (missing.seq !== last + 1) break;
              yield missing;
              last = missing.seq;
              if (await ends(missing)) return;
            }
            if (last + 1 >= event.seq || Date.now() > deadline || options.signal?.aborted) break;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
        yield event;
        last = event.seq;
        progressed = true;
        if (await ends(event)) return;
      }
      if (progressed) quietPolls = 0;
      let timedOut = false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timedOut = true;
          resolve();
        }, pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (live.length || options.signal?.aborted) wake();
      });
      wake = null;
      if (timedOut && ++quietPolls >= 3) {
        // Nothing for a while: a run that ended without a final event in the log ends the stream.
        const run = await fork().findOne(Run, { id: runId }, { fields: ['status'] });
        const more = await load(last);
        if (!more.length && (!run || ['completed', 'failed', 'timed_out', 'cancelled'].includes(run.status))) return;
        quietPolls = 0;
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await unsubscribe();
  }
}
