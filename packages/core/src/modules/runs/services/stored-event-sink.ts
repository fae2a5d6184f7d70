import type { Run } from '../entities/run.entity.js';
import type { PubSub } from '../../../ports/pubsub.js';
import type { RunStore, RunStoreWork } from '../../../ports/run-store.js';
import { Backlog, sizeOf, type RunEventSink } from './event-sink.js';
import { RunSuperseded } from './attempt-errors.js';
import { HEAD_EVENTS, headerOf, lineOf, runEventsTopic, tapOf, type RunEventText, type SinkHead, type Tap } from './event-text.js';

/** What a sink needs of the run store: appends to the log, and the reservation of sequence numbers. */
export type SinkStore = Pick<RunStore, 'append' | 'setSeqCeiling'>;

/** Sequence numbers an attempt reserves at a time (persisted on the run before use). */
export const SEQ_BLOCK = 10_000;
/**
 * How many numbers before the end of the reserved ones the next block is reserved: the events
 * past the end need not wait for that write (a commit) before they are published and stored.
 */
const RESERVE_AHEAD = SEQ_BLOCK / 2;
/** How late an event other than a chunk is stored at most when no checkpoint comes first. */
const EVENT_FLUSH_MS = 250;
/** Events stored in one row of the log at most; chunks are also stored as soon as this many wait. */
export const ROW_EVENTS = 2_000;

/** An event of the sink: its fields serialized once, at `emit`. */
type SinkEvent = RunEventText;

type FlushOutcome = { ok: true; answer: unknown } | { ok: false; error: unknown };

/** A store of the log asked for (`flushWith`): the events it stores, and its write. */
interface FlushStep {
  batch: SinkEvent[];
  /** Its events of `emitStored`, published once stored. */
  after: SinkEvent[];
  write?: RunStoreWork<unknown>;
  keepStored: (answer: unknown) => boolean;
  /** Set when an earlier store took this one into its transaction: how that ended. */
  outcome?: FlushOutcome;
}

/**
 * The sink of a stored run: every event gets the next sequence number, is serialized once, is
 * published at once on the run's PubSub topic (the live tail of every reader in every process:
 * one message per turn of the event loop, a header line and one line per event), and is appended
 * to the event log in batches: chunks when `ROW_EVENTS` of them wait or at most `flushMs` late;
 * other events with the block's checkpoint or the run's final record (callers flush before they
 * go on after any other event), or at most `EVENT_FLUSH_MS` late.
 *
 * Sequence numbers are reserved on the run (`seqCeiling`) before they are published, so a retry
 * after a lost worker starts above every number a reader could have seen.
 */
export class StoredEventSink implements RunEventSink {
  private next: number;
  private ceiling: number;
  /** Events not yet stored. */
  private pending: SinkEvent[] = [];
  /** Events not yet published (published together, once per turn of the event loop). */
  private outbox: SinkEvent[] = [];
  private publishScheduled = false;
  /** Events past the reserved numbers, published once the reservation is stored. */
  private held: SinkEvent[] = [];
  /** Events published only once they are stored (`emitStored`). */
  private afterStore: SinkEvent[] = [];
  private reserving: Promise<void> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** The end of the reserved numbers when the next block was last reserved ahead. */
  private reservedAheadOf = 0;
  /** Stores asked for (`flushWith`) that have not started, in order. */
  private steps: FlushStep[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The pending timer is a chunk's (the earliest any event sets: no other can move it closer). */
  private chunkTimer = false;
  private timerDue = 0;
  private failed: unknown = null;
  /** The block of the last chunk, and the start of its chunks' text (`{"blockId":"..","delta":`). */
  private chunkBlock: string | null = null;
  private chunkPrefix = '';
  /** Events emitted and not stored yet (pending, or in a store under way). */
  private readonly unstored = new Backlog();
  /** This process's sinks and readers of the PubSub. */
  private readonly tap: Tap;
  /** What this sink published so far, while that is little: the run's head for readers that attach (see `SinkHead`). */
  private readonly head: { start: number; events: RunEventText[] | null };

  private constructor(
    private readonly store: SinkStore,
    private readonly pubsub: PubSub,
    private readonly runId: string,
    /** The attempt the sink's reservations are fenced by (undefined: none). */
    private readonly attempt: number | undefined,
    start: number,
    private readonly flushMs: number,
  ) {
    this.next = start;
    this.ceiling = start;
    this.tap = tapOf(pubsub);
    this.head = { start, events: [] };
    this.tap.heads.set(runId, this.head satisfies SinkHead);
  }

  /**
   * A sink continuing after the run's reserved numbers, that writes no reservation before it
   * uses the next `SEQ_BLOCK`: they were reserved already (the claim of the attempt stored
   * `seqCeiling = run.seqCeiling + SEQ_BLOCK`), or none of them is seen unless stored (an ending
   * whose every event goes with its final record, `emitStored`; see `RunRecorder.endWithoutEngine`).
   * The next blocks are reserved under `run.attempt`: once another attempt took the run over, a
   * reservation is refused and the sink fails with `RunSuperseded` (its events past the reserved
   * numbers are neither published nor stored).
   */
  static reserved(store: SinkStore, pubsub: PubSub, run: Pick<Run, 'id' | 'seqCeiling'> & { attempt?: number }, flushMs: number): StoredEventSink {
    const sink = new StoredEventSink(store, pubsub, run.id, run.attempt, run.seqCeiling + 1, flushMs);
    sink.ceiling = run.seqCeiling + 1 + SEQ_BLOCK;
    return sink;
  }

  /** Emits an event that is published only after the next flush stored it (e.g. `run_complete` after the final record). */
  emitStored(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    const event: SinkEvent = { seq, type, json: JSON.stringify(data), chunk: undefined };
    this.pending.push(event);
    this.unstored.add(1, event.json.length);
    if (seq >= this.ceiling) void this.reserve().catch(() => undefined);
    else if (seq >= this.ceiling - RESERVE_AHEAD) this.reserveAhead();
    this.afterStore.push(event);
    return seq;
  }

  emit(type: string, data: Record<string, unknown>): number {
    return this.add(type, JSON.stringify(data));
  }

  /** `{"blockId":"..","delta":`: the start of a chunk's text, the block's part serialized once per block. */
  private chunkStart(blockId: string): string {
    if (blockId !== this.chunkBlock) {
      this.chunkBlock = blockId;
      this.chunkPrefix = '{"blockId":' + JSON.stringify(blockId) + ',"delta":';
    }
    return this.chunkPrefix;
  }

  emitChunk(blockId: string, delta: string): number {
    // The text `JSON.stringify({ blockId, delta })` gives.
    const start = this.chunkStart(blockId);
    return this.add('block_chunk', start + JSON.stringify(delta) + '}', start);
  }

  emitChunkBodies(blockId: string, bodies: readonly string[]): number {
    // What `add` does for each, with its checks once for the batch.
    const start = this.chunkStart(blockId);
    const prefix = start + '"';
    let bytes = 0;
    for (const body of bodies) {
      const seq = this.next++;
      const event: SinkEvent = { seq, type: 'block_chunk', json: prefix + body + '"}', chunk: start };
      this.pending.push(event);
      bytes += event.json.length;
      if (seq < this.ceiling && !this.held.length) this.outbox.push(event);
      else this.held.push(event);
      // A full row is stored at once (the store counts these events out of the backlog later, after they were counted in below).
      if (this.pending.length >= ROW_EVENTS) void this.flush().catch(() => undefined);
    }
    this.unstored.add(bodies.length, bytes);
    if (this.outbox.length && !this.publishScheduled) {
      this.publishScheduled = true;
      setImmediate(() => this.publish());
    }
    if (this.held.length) void this.reserve().catch(() => undefined);
    else if (this.next - 1 >= this.ceiling - RESERVE_AHEAD) this.reserveAhead();
    if (this.pending.length && !this.chunkTimer) this.schedule(this.flushMs, true);
    return this.next - 1;
  }

  /** `chunk`: set for a chunk (see `RunEventText.chunk`). */
  private add(type: string, json: string, chunk?: string): number {
    const seq = this.next++;
    const event: SinkEvent = { seq, type, json, chunk };
    this.pending.push(event);
    this.unstored.add(1, json.length);
    if (seq < this.ceiling && !this.held.length) {
      this.outbox.push(event);
      if (!this.publishScheduled) {
        this.publishScheduled = true;
        setImmediate(() => this.publish());
      }
      if (seq >= this.ceiling - RESERVE_AHEAD) this.reserveAhead();
    } else {
      this.held.push(event);
      void this.reserve().catch(() => undefined);
    }
    if (type === 'block_chunk') {
      // A full row of chunks is stored at once; fewer at most `flushMs` late.
      if (this.pending.length >= ROW_EVENTS) void this.flush().catch(() => undefined);
      else if (!this.chunkTimer) this.schedule(this.flushMs, true);
    } else if (!this.chunkTimer) {
      // Other events go with the block's checkpoint or the run's final record, or after
      // `EVENT_FLUSH_MS` (a reader that missed one live finds it in the log).
      this.schedule(Math.max(this.flushMs, EVENT_FLUSH_MS), false);
    }
    return seq;
  }

  private schedule(delayMs: number, chunk: boolean): void {
    const due = Date.now() + delayMs;
    if (this.timer && due >= this.timerDue) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.chunkTimer = chunk;
    this.timer = setTimeout(() => void this.flush().catch(() => undefined), delayMs);
  }

  private publish(): void {
    this.publishScheduled = false;
    const events = this.outbox;
    if (!events.length) return;
    this.outbox = [];
    const head = this.head;
    if (head.events) {
      if (head.events.length + events.length > HEAD_EVENTS) head.events = null;
      else head.events.push(...events);
    }
    // The readers of this process first, straight from here.
    const tap = this.tap;
    const readers = tap.readers.get(this.runId);
    if (readers) for (const reader of readers) reader(events);
    // Everyone else through PubSub. With the in-process PubSub the readers are all local; the
    // message is still sent to whoever else may listen on the topic.
    if (this.pubsub.hasListeners && !this.pubsub.hasListeners(runEventsTopic(this.runId))) return;
    let message = headerOf(tap.id);
    for (const event of events) message += '\n' + lineOf(event.seq, event.type, event.json);
    void this.pubsub.publish(runEventsTopic(this.runId), message).catch(() => undefined);
  }

  /** Reserves the next block once per block, ahead of need (a failure is retried when the numbers run out). */
  private reserveAhead(): void {
    if (this.reservedAheadOf === this.ceiling || this.reserving) return;
    this.reservedAheadOf = this.ceiling;
    void this.reserve().catch(() => undefined);
  }

  private reserve(): Promise<void> {
    if (this.reserving) return this.reserving;
    if (this.failed) {
      // A failed sink publishes and stores nothing more: what waits for numbers is dropped.
      this.held = [];
      return Promise.reject(this.failed);
    }
    this.reserving = (async () => {
      const ceiling = Math.max(this.ceiling, this.next) + SEQ_BLOCK;
      // Fenced by the attempt: a superseded attempt that raised (or lowered) the ceiling under the
      // one that took over would leave a gap in the log, or let a later attempt reuse numbers.
      let written: boolean;
      try {
        written = await this.store.setSeqCeiling({ id: this.runId, attempt: this.attempt }, ceiling - 1);
      } catch (error) {
        // A failed write fails the sink, as a failed store of its events does (asked again at
        // once, it would be asked in a loop as long as events wait for numbers).
        this.fail(error);
        throw error;
      }
      if (!written) {
        this.fail(new RunSuperseded(`Run ${this.runId}: another attempt took the run over; this one reserves no more numbers.`));
        throw this.failed;
      }
      this.ceiling = ceiling;
      const held = this.held;
      this.held = [];
      // Not `push(...held)`: what a slow reservation held back can be more events than a call takes arguments.
      this.outbox = this.outbox.length ? this.outbox.concat(held) : held;
      this.publish();
    })().finally(() => {
      this.reserving = null;
      if (this.held.length && this.next >= this.ceiling && !this.failed) void this.reserve().catch(() => undefined);
    });
    return this.reserving;
  }

  /** From here on the sink publishes and stores nothing more, and its producers need not wait for it. */
  private fail(error: unknown): void {
    this.failed = error;
    this.held = [];
    this.unstored.release();
  }

  flush(): Promise<void> {
    return this.flushWith();
  }

  backlog(): Promise<void> | undefined {
    return this.failed ? undefined : this.unstored.wait();
  }

  /**
   * Stores the events emitted so far and runs `write` in the same transaction (a checkpoint of
   * the run with the events of its block: one write per block). `write` runs even when there are
   * no events; its answer is returned once the transaction committed. Without `write`, only the
   * events (nothing at all when none are pending). When `keepStored` says no to the answer of
   * `write`, the events of `emitStored` are dropped (the write they depend on did not happen).
   *
   * Stores happen one after the other, in order. One that starts takes with it the stores asked
   * for since that have not started (flushes without a write, and the first with a write that
   * ends them) into its own transaction: with SQLite's commits one after the other, a fast emitter
   * would otherwise queue a commit (a sync of the disk) per full row, and the block's checkpoint
   * and the run's final record (`run_complete`) would wait behind every one of them.
   */
  flushWith<T = undefined>(write?: RunStoreWork<T>, keepStored: (answer: T) => boolean = () => true): Promise<T> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
      this.chunkTimer = false;
    }
    this.publish();
    const step: FlushStep = {
      batch: this.pending,
      after: this.afterStore,
      write: write as FlushStep['write'],
      keepStored: keepStored as FlushStep['keepStored'],
    };
    this.pending = [];
    this.afterStore = [];
    this.steps.push(step);
    const done = this.flushing.then(async () => {
      // Taken into an earlier store: its outcome.
      if (step.outcome) {
        if (!step.outcome.ok) throw step.outcome.error;
        return step.outcome.answer as T;
      }
      // Not taken: it is the first store asked for that has not started.
      this.steps.shift();
      const steps = [step];
      while (this.steps.length) {
        const next = this.steps[0]!;
        if (next.write && steps.some((s) => s.write)) break;
        steps.push(this.steps.shift()!);
        if (next.write) break;
      }
      const settle = (outcome: FlushOutcome) => {
        for (let i = 1; i < steps.length; i++) steps[i]!.outcome = outcome;
      };
      // `concat` copies whole arrays (a `flatMap` here took a third of a millisecond for a run's 10,000 chunks).
      const events = steps.length === 1 ? step.batch : ([] as SinkEvent[]).concat(...steps.map((s) => s.batch));
      const writing = steps.find((s) => s.write);
      // Whatever happens to them next, these events leave the backlog (stored, or dropped with a failure).
      const leave = () => this.unstored.remove(events.length, sizeOf(events));
      try {
        if (this.failed) throw this.failed;
        // Events past the numbers stored on the run wait for their reservation (a retry of the run
        // starts above the stored ceiling: the log must hold nothing above it).
        if (this.reserving && events.length && events[events.length - 1]!.seq >= this.ceiling) await this.reserving;
      } catch (error) {
        leave();
        settle({ ok: false, error });
        throw error;
      }
      if (!writing && !events.length) {
        settle({ ok: true, answer: undefined });
        return undefined as T;
      }
      const runId = this.runId;
      let answer: unknown;
      try {
        answer = await this.store.append(runId, events, writing ? { write: writing.write!, keep: writing.keepStored, conditional: writing.after } : undefined);
      } catch (error) {
        if (events.length) this.failed = error;
        leave();
        // A failed sink stores nothing more: its producers need not wait for it.
        if (this.failed) this.unstored.release();
        settle({ ok: false, error });
        throw error;
      }
      leave();
      let published = false;
      for (const s of steps) {
        if (!s.after.length || (s.write && !s.keepStored(answer))) continue;
        this.outbox = this.outbox.concat(s.after);
        published = true;
      }
      if (published) this.publish();
      // Only the store with the write has an answer; the others resolve with nothing.
      for (let i = 1; i < steps.length; i++) steps[i]!.outcome = { ok: true, answer: steps[i] === writing ? answer : undefined };
      return (step === writing ? answer : undefined) as T;
    });
    this.flushing = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /** Stores what is left; from then on a reader that attaches reads the log (this sink's head is let go). */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.head.events = null;
      if (this.tap.heads.get(this.runId) === this.head) this.tap.heads.delete(this.runId);
    }
  }

  get lastSeq(): number {
    return this.next - 1;
  }
}
