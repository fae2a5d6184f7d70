import type { EntityManager } from '@mikro-orm/core';
import { RunEvent, type StoredRunEvent } from '../entities/run-event.entity.js';
import { Run } from '../entities/run.entity.js';
import type { PubSub } from '../../../ports/pubsub.js';
import type { GroupCommit } from './group-commit.js';

/** One event of a run's stream: the spec's event name as `type`, its fields as `data`. */
export type RunEventRecord = StoredRunEvent;

export const runEventsTopic = (runId: string) => `runs:events:${runId}`;
export const runControlTopic = (runId: string) => `runs:control:${runId}`;

/** Where an executing run's events go. */
export interface RunEventSink {
  emit(type: string, data: Record<string, unknown>): number;
  /**
   * Emits an event that readers see only once the next store of the log (a checkpoint or the
   * final record) committed: a client that saw it reads the state it announces.
   */
  emitStored(type: string, data: Record<string, unknown>): number;
  /** Resolves once every event emitted so far is stored. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Sequence numbers an attempt reserves at a time (persisted on the run before use). */
export const SEQ_BLOCK = 10_000;
/** How late an event other than a chunk is stored at most when no checkpoint comes first. */
const EVENT_FLUSH_MS = 250;
/** Events stored in one row of the log at most. */
const ROW_EVENTS = 2_000;

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
  /** Events not yet stored. */
  private pending: StoredRunEvent[] = [];
  /** Events not yet published (published together, once per turn of the event loop). */
  private outbox: StoredRunEvent[] = [];
  private publishScheduled = false;
  /** Events past the reserved numbers, published once the reservation is stored. */
  private held: StoredRunEvent[] = [];
  /** Events published only once they are stored (`emitStored`). */
  private afterStore: StoredRunEvent[] = [];
  private reserving: Promise<void> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private timerDue = 0;
  private failed: unknown = null;

  private constructor(
    private readonly group: GroupCommit,
    private readonly pubsub: PubSub,
    private readonly runId: string,
    start: number,
    private readonly flushMs: number,
  ) {
    this.next = start;
    this.ceiling = start;
  }

  /** A sink for the run's current attempt, continuing after the run's reserved numbers. */
  static async open(group: GroupCommit, pubsub: PubSub, run: Pick<Run, 'id' | 'seqCeiling'>, flushMs: number): Promise<StoredEventSink> {
    const sink = new StoredEventSink(group, pubsub, run.id, run.seqCeiling + 1, flushMs);
    await sink.reserve();
    return sink;
  }

  /**
   * A sink whose numbers were already reserved on the run (the claim of the attempt stored
   * `seqCeiling = run.seqCeiling + SEQ_BLOCK`): saves the reservation's own write.
   */
  static reserved(group: GroupCommit, pubsub: PubSub, run: Pick<Run, 'id' | 'seqCeiling'>, flushMs: number): StoredEventSink {
    const sink = new StoredEventSink(group, pubsub, run.id, run.seqCeiling + 1, flushMs);
    sink.ceiling = run.seqCeiling + 1 + SEQ_BLOCK;
    return sink;
  }

  /** Emits an event that is published only after the next flush stored it (e.g. `run_complete` after the final record). */
  emitStored(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    const event = { seq, type, data };
    this.pending.push(event);
    if (seq >= this.ceiling) void this.reserve().catch(() => undefined);
    this.afterStore.push(event);
    return seq;
  }

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    const event = { seq, type, data };
    this.pending.push(event);
    if (seq < this.ceiling && !this.held.length) {
      this.outbox.push(event);
      if (!this.publishScheduled) {
        this.publishScheduled = true;
        setImmediate(() => this.publish());
      }
    } else {
      this.held.push(event);
      void this.reserve().catch(() => undefined);
    }
    // Chunks are stored at most `flushMs` late; other events go with the block's checkpoint or the
    // run's final record, or after `EVENT_FLUSH_MS` (a reader that missed one live finds it in the log).
    const due = Date.now() + (type === 'block_chunk' ? this.flushMs : Math.max(this.flushMs, EVENT_FLUSH_MS));
    if (!this.timer || due < this.timerDue) {
      if (this.timer) clearTimeout(this.timer);
      this.timerDue = due;
      this.timer = setTimeout(() => void this.flush().catch(() => undefined), due - Date.now());
    }
    return seq;
  }

  private publish(): void {
    this.publishScheduled = false;
    if (!this.outbox.length) return;
    const message = JSON.stringify(this.outbox);
    this.outbox = [];
    void this.pubsub.publish(runEventsTopic(this.runId), message).catch(() => undefined);
  }

  private reserve(): Promise<void> {
    if (this.reserving) return this.reserving;
    this.reserving = (async () => {
      const ceiling = Math.max(this.ceiling, this.next) + SEQ_BLOCK;
      await this.group.run((tx) => tx.nativeUpdate(Run, { id: this.runId }, { seqCeiling: ceiling - 1 }), { atomic: true });
      this.ceiling = ceiling;
      const held = this.held;
      this.held = [];
      this.outbox.push(...held);
      this.publish();
    })().finally(() => {
      this.reserving = null;
      if (this.held.length && this.next >= this.ceiling) void this.reserve().catch(() => undefined);
    });
    return this.reserving;
  }

  flush(): Promise<void> {
    return this.flushWith();
  }

  /**
   * Stores the events emitted so far and runs `write` in the same transaction (a checkpoint of
   * the run with the events of its block: one write per block). `write` runs even when there are
   * no events; its answer is returned once the transaction committed. Without `write`, only the
   * events (nothing at all when none are pending). When `keepStored` says no to the answer of
   * `write`, the events of `emitStored` are dropped (the write they depend on did not happen).
   */
  flushWith<T = undefined>(write?: (tx: EntityManager) => Promise<T>, keepStored: (answer: T) => boolean = () => true): Promise<T> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.publish();
    const batch = this.pending;
    this.pending = [];
    let after = this.afterStore;
    this.afterStore = [];
    const done = this.flushing.then(async () => {
      if (this.failed) throw this.failed;
      if (this.reserving) await this.reserving;
      if (!write && !batch.length) return undefined as T;
      const runId = this.runId;
      let result: T;
      try {
        // Runs again from the start when its group is rolled back: it changes nothing but the database.
        result = await this.group.run(async (tx) => {
          const answer = write ? await write(tx) : (undefined as T);
          // The write did not take: the events held for it are neither stored nor published.
          const held = write && !keepStored(answer) ? new Set(after) : null;
          const events = held ? batch.filter((event) => !held.has(event)) : batch;
          if (events.length) {
            const now = new Date();
            const rows: RunEvent[] = [];
            for (let i = 0; i < events.length; i += ROW_EVENTS) {
              const slice = events.slice(i, i + ROW_EVENTS);
              rows.push({ runId, seq: slice[0]!.seq, lastSeq: slice.at(-1)!.seq, events: slice, createdAt: now });
            }
            await this.group.insertLater(tx, RunEvent, rows);
          }
          return answer;
        });
      } catch (error) {
        if (batch.length) this.failed = error;
        throw error;
      }
      if (write && !keepStored(result)) after = [];
      if (after.length) {
        this.outbox.push(...after);
        this.publish();
      }
      return result;
    });
    this.flushing = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  async close(): Promise<void> {
    await this.flush();
  }

  get lastSeq(): number {
    return this.next - 1;
  }
}

/** The sink of a debug run (content given in the request): events go to the request's stream only. */
export class LocalEventSink implements RunEventSink {
  private next = 1;
  private queue: RunEventRecord[] = [];
  private wake: (() => void) | null = null;
  private closed = false;

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    this.queue.push({ seq, type, data });
    this.wake?.();
    return seq;
  }

  /** Nothing is stored: the event goes out with the others. */
  emitStored(type: string, data: Record<string, unknown>): number {
    return this.emit(type, data);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }

  async *batches(): AsyncGenerator<RunEventRecord[]> {
    for (;;) {
      if (this.queue.length) yield this.queue.splice(0);
      if (this.queue.length) continue;
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

/** Rows of the log read at a time. */
const PAGE = 20;

/**
 * Follows a run's event stream from just after `after`: the events of the log first, then the
 * live tail from PubSub, each sequence number exactly once and in order. A hole in the live
 * sequence (events published before they were stored, or a message PubSub dropped) is filled from
 * the log. The stream ends after `run_complete` (or `run_waiting`, see options).
 */
export async function* followRunBatches(fork: () => EntityManager, pubsub: PubSub, runId: string, after: number, options: FollowOptions): AsyncGenerator<RunEventRecord[]> {
  let out: RunEventRecord[] = [];
  const pollMs = options.pollMs ?? 1_000;
  const gapWaitMs = options.gapWaitMs ?? 3_000;
  const live: RunEventRecord[] = [];
  let liveAt = 0;
  let wake: (() => void) | null = null;
  const unsubscribe = await pubsub.subscribe(runEventsTopic(runId), (message) => {
    const events = JSON.parse(typeof message === 'string' ? message : Buffer.from(message).toString('utf8')) as RunEventRecord[];
    for (const event of events) live.push(event);
    wake?.();
  });
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  let last = after;
  const load = async (from: number, below?: number): Promise<RunEventRecord[]> => {
    const rows = await fork().find(
      RunEvent,
      below === undefined ? { runId, lastSeq: { $gt: from } } : { runId, lastSeq: { $gt: from }, seq: { $lt: below } },
      { orderBy: { seq: 'asc' }, limit: PAGE, fields: ['seq', 'lastSeq', 'events'] },
    );
    const out: RunEventRecord[] = [];
    for (const row of rows) for (const event of row.events) if (event.seq > from && (below === undefined || event.seq < below)) out.push(event);
    return out;
  };
  const final = (event: RunEventRecord) => event.type === 'run_complete' || event.type === 'run_waiting';
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
          out.push(event);
          last = event.seq;
          if (final(event) && (await ends(event))) return yield out;
        }
        yield out;
        out = [];
        stored = await load(last);
      }
      // The live tail.
      let progressed = false;
      while (liveAt < live.length) {
        const event = live[liveAt++]!;
        if (liveAt === live.length) {
          live.length = 0;
          liveAt = 0;
        }
        if (event.seq <= last) continue;
        if (event.seq > last + 1) {
          const deadline = Date.now() + gapWaitMs;
          for (;;) {
            if (out.length) {
              yield out;
              out = [];
            }
            for (const missing of await load(last, event.seq)) {
              if (missing.seq !== last + 1) break;
              out.push(missing);
              last = missing.seq;
              if (final(missing) && (await ends(missing))) return yield out;
            }
            if (last + 1 >= event.seq || Date.now() > deadline || options.signal?.aborted) break;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
        out.push(event);
        last = event.seq;
        progressed = true;
        if (final(event) && (await ends(event))) return yield out;
      }
      if (out.length) {
        yield out;
        out = [];
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
        if (liveAt < live.length || options.signal?.aborted) wake();
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

/** `followRunBatches`, one event at a time. */
export async function* followRun(fork: () => EntityManager, pubsub: PubSub, runId: string, after: number, options: FollowOptions): AsyncGenerator<RunEventRecord> {
  for await (const batch of followRunBatches(fork, pubsub, runId, after, options)) yield* batch;
}
