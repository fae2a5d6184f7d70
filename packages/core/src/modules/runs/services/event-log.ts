import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { RunEvent, type StoredRunEvent } from '../entities/run-event.entity.js';
import { Run } from '../entities/run.entity.js';
import { sqlRowTable, sqlStatement, type PreparedStatements, type RowSink } from '../../../ports/database.js';
import type { PubSub } from '../../../ports/pubsub.js';
import type { GroupCommit } from '../../../kernel/group-commit.js';

/** One event of a run's stream: the spec's event name as `type`, its fields as `data`. */
export type RunEventRecord = StoredRunEvent;

/**
 * An event as the stream writers take it: its fields as JSON text (`json`), serialized once where
 * the event was emitted and never parsed on its way to the client. `data` is there when the
 * event was at hand as an object anyway (debug runs).
 */
export interface RunEventText {
  seq: number;
  type: string;
  json: string;
  data?: Record<string, unknown>;
}

/** The fields of a streamed event as an object (parsed from its text when it has no object). */
export const eventData = (event: RunEventText): Record<string, unknown> => event.data ?? (JSON.parse(event.json) as Record<string, unknown>);

/**
 * The log's statements (prepared once per connection). A row holds the JSON array of its events
 * as written by the sink (`[{"seq":..,"type":..,"data":{..}},..]`), so storing a batch costs one
 * string join, not a serialization of every event.
 */
/** Rows of the log (after the runs they belong to). */
const eventRows = sqlRowTable('runs.event_log_insert', '"run_events" ("run_id", "seq", "last_seq", "events", "created_at")', '(?, ?, ?, ?, ?)', 4);
const selectEventRows = sqlStatement(
  'runs.event_log_after',
  'select "seq", "last_seq", "events" from "run_events" where "run_id" = ? and "last_seq" > ? order by "seq" limit 20',
);
const selectEventRowsBelow = sqlStatement(
  'runs.event_log_between',
  'select "seq", "last_seq", "events" from "run_events" where "run_id" = ? and "last_seq" > ? and "seq" < ? order by "seq" limit 20',
);

/**
 * The first line of a PubSub message of run events (the event lines follow, one JSON object
 * each): `{"format":"run-events","version":2,"from":"<tap id>"}`.
 */
const headerOf = (from: string) => `{"format":"run-events","version":2,"from":${JSON.stringify(from)}}`;

/**
 * The sinks and readers of one PubSub instance in this process: a sink hands its events to the
 * readers of its run here directly (no message to parse), and those readers skip the PubSub
 * messages of this tap (`from` in the header). Readers of other processes, or of another PubSub
 * instance of this process, get the messages.
 */
interface Tap {
  id: string;
  readers: Map<string, Set<(events: readonly RunEventText[]) => void>>;
}

const taps = new WeakMap<PubSub, Tap>();

function tapOf(pubsub: PubSub): Tap {
  let tap = taps.get(pubsub);
  if (!tap) taps.set(pubsub, (tap = { id: randomUUID(), readers: new Map() }));
  return tap;
}

/** Whether a PubSub message came from a sink of this tap (read from its header line only). */
function fromTap(message: Uint8Array | string, tap: Tap): boolean {
  const text = typeof message === 'string' ? message : Buffer.from(message.buffer, message.byteOffset, Math.min(message.byteLength, 200)).toString('latin1');
  const end = text.indexOf('\n');
  return end > 0 && end < 200 && text.slice(0, end) === headerOf(tap.id);
}

/** An event type as JSON text (`"block_chunk"`), serialized once per type. */
const typeTexts = new Map<string, string>();
export function typeJson(type: string): string {
  let text = typeTexts.get(type);
  if (text === undefined) {
    text = JSON.stringify(type);
    // Event types are a handful of names; anything else is not kept.
    if (typeTexts.size < 256) typeTexts.set(type, text);
  }
  return text;
}

/** `,"type":"block_chunk","data":`: the middle of an event line, once per type. */
const typeFields = new Map<string, string>();
function typeField(type: string): string {
  let text = typeFields.get(type);
  if (text === undefined) {
    text = ',"type":' + typeJson(type) + ',"data":';
    if (typeFields.size < 256) typeFields.set(type, text);
  }
  return text;
}

/** `{"seq":1,"type":"block_chunk","data":{...}}`: an event as one JSON text, in the log and on PubSub. */
const lineOf = (seq: number, type: string, json: string) => '{"seq":' + seq + typeField(type) + json + '}';

/** The `events` column of a row: the JSON array of the lines of `events[from..to)`. */
function rowText(events: readonly RunEventText[], from: number, to: number): string {
  // Built with `+=`: measured against joining an array of the parts (one flat string the driver
  // need not flatten), the rope costs less, flattening included.
  let text = '[';
  for (let i = from; i < to; i++) {
    const event = events[i]!;
    text += (i === from ? '{"seq":' : ',{"seq":') + event.seq + typeField(event.type) + event.json + '}';
  }
  return text + ']';
}

/** Reads an event line back without parsing its fields (any other JSON object of the same meaning is parsed). */
export function parseEventLine(line: string): RunEventText {
  if (line.startsWith('{"seq":')) {
    const comma = line.indexOf(',', 7);
    const seq = Number(line.slice(7, comma));
    if (comma > 7 && Number.isSafeInteger(seq) && line.startsWith(',"type":"', comma)) {
      const typeEnd = line.indexOf('"', comma + 9);
      const type = line.slice(comma + 9, typeEnd);
      if (typeEnd > 0 && !type.includes('\\') && line.startsWith(',"data":{', typeEnd + 1) && line.endsWith('}}')) {
        return { seq, type, json: line.slice(typeEnd + 9, -1) };
      }
    }
  }
  return textOf(JSON.parse(line) as StoredRunEvent);
}

const textOf = (event: StoredRunEvent): RunEventText => ({ seq: event.seq, type: event.type, json: JSON.stringify(event.data ?? {}) });

/**
 * The events of a PubSub message of a run's topic: the current form (a header line, then one
 * event line each) or, from a process of an earlier version during a rolling upgrade, a JSON
 * array of `{ seq, type, data }`.
 */
export function parseEventMessage(message: Uint8Array | string): RunEventText[] {
  const text = typeof message === 'string' ? message : Buffer.from(message).toString('utf8');
  if (text.startsWith('[')) return (JSON.parse(text) as StoredRunEvent[]).map(textOf);
  const out: RunEventText[] = [];
  let start = text.indexOf('\n') + 1;
  if (start === 0) return out;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) out.push(parseEventLine(text.slice(start, end)));
    start = end + 1;
  }
  return out;
}

/** The events of a row of the log (its `events` column: JSON text on SQLite, parsed by the driver on PostgreSQL). */
function rowEvents(value: unknown): StoredRunEvent[] {
  if (typeof value === 'string') return JSON.parse(value) as StoredRunEvent[];
  if (value instanceof Uint8Array) return JSON.parse(Buffer.from(value).toString('utf8')) as StoredRunEvent[];
  return value as StoredRunEvent[];
}

export const runEventsTopic = (runId: string) => `runs:events:${runId}`;
export const runControlTopic = (runId: string) => `runs:control:${runId}`;

/** Where an executing run's events go. */
export interface RunEventSink {
  emit(type: string, data: Record<string, unknown>): number;
  /** `emit('block_chunk', { blockId, delta })`, the same event, without the object on the way. */
  emitChunk(blockId: string, delta: string): number;
  /**
   * Emits an event that readers see only once the next store of the log (a checkpoint or the
   * final record) committed: a client that saw it reads the state it announces.
   */
  emitStored(type: string, data: Record<string, unknown>): number;
  /** Resolves once every event emitted so far is stored. */
  flush(): Promise<void>;
  close(): Promise<void>;
  /**
   * Undefined while the sink keeps up; when more than `BACKLOG_EVENTS` events or
   * `BACKLOG_BYTES` of them wait to be stored (or read), a promise that resolves once half of that
   * is left. Producers that can wait (code blocks' emits, model streams, tool results) wait for
   * it before they produce more: what a run holds in memory stays bounded however fast it emits.
   */
  backlog(): Promise<void> | undefined;
}

/** Events a sink may hold unstored before its producers are held back (see `RunEventSink.backlog`). */
export const BACKLOG_EVENTS = 8_000;
/** Bytes (UTF-16 code units of the events' JSON) a sink may hold unstored before its producers are held back. */
export const BACKLOG_BYTES = 4 * 1024 * 1024;

/** The backlog of a sink: events and their size held, and the producers waiting for it to shrink. */
class Backlog {
  events = 0;
  bytes = 0;
  private drained: { promise: Promise<void>; resolve: () => void } | null = null;

  add(events: number, bytes: number): void {
    this.events += events;
    this.bytes += bytes;
  }

  remove(events: number, bytes: number): void {
    this.events = Math.max(0, this.events - events);
    this.bytes = Math.max(0, this.bytes - bytes);
    if (this.drained && this.events <= BACKLOG_EVENTS / 2 && this.bytes <= BACKLOG_BYTES / 2) this.release();
  }

  /** Lets every waiting producer go (the backlog shrank, or the sink failed or stopped keeping events). */
  release(): void {
    const drained = this.drained;
    this.drained = null;
    drained?.resolve();
  }

  wait(): Promise<void> | undefined {
    if (this.events <= BACKLOG_EVENTS && this.bytes <= BACKLOG_BYTES) return undefined;
    if (!this.drained) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.drained = { promise, resolve };
    }
    return this.drained.promise;
  }
}

const sizeOf = (events: readonly RunEventText[]): number => {
  let bytes = 0;
  for (const event of events) bytes += event.json.length;
  return bytes;
};

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
  write?: (tx: EntityManager, rows: RowSink) => Promise<unknown>;
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

  private constructor(
    private readonly group: GroupCommit,
    private readonly pubsub: PubSub,
    private readonly sql: PreparedStatements,
    private readonly runId: string,
    start: number,
    private readonly flushMs: number,
  ) {
    this.next = start;
    this.ceiling = start;
  }

  /** A sink for the run's current attempt, continuing after the run's reserved numbers. */
  static async open(group: GroupCommit, pubsub: PubSub, sql: PreparedStatements, run: Pick<Run, 'id' | 'seqCeiling'>, flushMs: number): Promise<StoredEventSink> {
    const sink = new StoredEventSink(group, pubsub, sql, run.id, run.seqCeiling + 1, flushMs);
    await sink.reserve();
    return sink;
  }

  /**
   * A sink whose numbers were already reserved on the run (the claim of the attempt stored
   * `seqCeiling = run.seqCeiling + SEQ_BLOCK`): saves the reservation's own write.
   */
  static reserved(group: GroupCommit, pubsub: PubSub, sql: PreparedStatements, run: Pick<Run, 'id' | 'seqCeiling'>, flushMs: number): StoredEventSink {
    const sink = new StoredEventSink(group, pubsub, sql, run.id, run.seqCeiling + 1, flushMs);
    sink.ceiling = run.seqCeiling + 1 + SEQ_BLOCK;
    return sink;
  }

  /** Emits an event that is published only after the next flush stored it (e.g. `run_complete` after the final record). */
  emitStored(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    const event: SinkEvent = { seq, type, json: JSON.stringify(data) };
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

  emitChunk(blockId: string, delta: string): number {
    // The text `JSON.stringify({ blockId, delta })` gives, the block's part serialized once.
    if (blockId !== this.chunkBlock) {
      this.chunkBlock = blockId;
      this.chunkPrefix = '{"blockId":' + JSON.stringify(blockId) + ',"delta":';
    }
    return this.add('block_chunk', this.chunkPrefix + JSON.stringify(delta) + '}');
  }

  private add(type: string, json: string): number {
    const seq = this.next++;
    const event: SinkEvent = { seq, type, json };
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
    // The readers of this process first, straight from here.
    const tap = tapOf(this.pubsub);
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
    this.reserving = (async () => {
      const ceiling = Math.max(this.ceiling, this.next) + SEQ_BLOCK;
      await this.group.run((tx) => tx.nativeUpdate(Run, { id: this.runId }, { seqCeiling: ceiling - 1 }), { atomic: true, concurrent: true });
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
  flushWith<T = undefined>(write?: (tx: EntityManager, rows: RowSink) => Promise<T>, keepStored: (answer: T) => boolean = () => true): Promise<T> {
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
      const events = steps.length === 1 ? step.batch : steps.flatMap((s) => s.batch);
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
        // Runs again from the start when its group is rolled back: it changes nothing but the database.
        answer = await this.group.run(async (tx, _alone, rows) => {
          const answer = writing ? await writing.write!(tx, rows) : undefined;
          // The write did not take: the events held for it are neither stored nor published.
          const held = writing && !writing.keepStored(answer) ? new Set(writing.after) : null;
          const stored = held ? events.filter((event) => !held.has(event)) : events;
          if (stored.length) {
            const now = new Date();
            for (let i = 0; i < stored.length; i += ROW_EVENTS) {
              const end = Math.min(stored.length, i + ROW_EVENTS);
              await rows.insertRow(tx, eventRows, [runId, stored[i]!.seq, stored[end - 1]!.seq, rowText(stored, i, end), now]);
            }
          }
          return answer;
        }, { concurrent: true });
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
        this.outbox.push(...s.after);
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
  private queue: (RunEventRecord & RunEventText)[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  /** Set when nobody will read the events (the run's caller asked for its result only, or its reader left): they are not kept. */
  private unread = false;
  /** Events in the queue, not yet taken by the reader. */
  private readonly queued = new Backlog();

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    if (this.unread) return seq;
    const event = { seq, type, data, json: JSON.stringify(data) };
    this.queue.push(event);
    this.queued.add(1, event.json.length);
    this.wake?.();
    return seq;
  }

  backlog(): Promise<void> | undefined {
    return this.unread ? undefined : this.queued.wait();
  }

  /** Stops keeping events: nobody will read them (the queue is dropped and producers never wait). */
  discard(): void {
    this.unread = true;
    this.queue = [];
    this.queued.remove(this.queued.events, this.queued.bytes);
    this.queued.release();
  }

  emitChunk(blockId: string, delta: string): number {
    return this.emit('block_chunk', { blockId, delta });
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

  /** The events in the batches they are taken in; a reader that stops early leaves the rest unkept. */
  async *batches(): AsyncGenerator<(RunEventRecord & RunEventText)[]> {
    try {
      for (;;) {
        if (this.queue.length) {
          const batch = this.queue;
          this.queue = [];
          this.queued.remove(batch.length, sizeOf(batch));
          yield batch;
        }
        if (this.queue.length) continue;
        if (this.closed) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
      }
    } finally {
      this.discard();
    }
  }
}

/** Events a reader holds from the live tail before it drops them and reads the log instead. */
export const LIVE_EVENTS = 20_000;

export interface FollowOptions {
  /** End at `run_waiting` when the run is still waiting for an answer. */
  endWhenWaiting: boolean;
  /** How long the live tail may stay quiet before the log is read again (lost PubSub messages, a dead worker). */
  pollMs?: number;
  /** How long a hole in the sequence may stay unfilled before the reader moves on. */
  gapWaitMs?: number;
  signal?: AbortSignal;
  /** The database's prepared statements, for reading the log (without: through the ORM). */
  sql?: PreparedStatements;
}

/**
 * Follows a run's event stream from just after `after`: the events of the log first, then the
 * live tail from PubSub, each sequence number exactly once and in order. The log is read only at
 * the start, to fill a hole in the live sequence (events published before this reader
 * subscribed and stored since, or a message PubSub dropped), and when the live tail stays quiet
 * for `pollMs`; otherwise events come straight from PubSub, as the text they were published in.
 * The stream ends after `run_complete` (or `run_waiting`, see options).
 */
export async function* followRunBatches(fork: () => EntityManager, pubsub: PubSub, runId: string, after: number, options: FollowOptions): AsyncGenerator<RunEventText[]> {
  let out: RunEventText[] = [];
  const pollMs = options.pollMs ?? 1_000;
  const gapWaitMs = options.gapWaitMs ?? 3_000;
  const { sql } = options;
  /** The live tail not read yet: the arrays as the sinks and messages gave them (never changed here), `liveAt` into the first. */
  const live: (readonly RunEventText[])[] = [];
  let liveAt = 0;
  /** Events in `live`; past `LIVE_EVENTS` (a reader slower than the run) the live tail is dropped and read from the log instead. */
  let liveCount = 0;
  let overflowed = false;
  let wake: (() => void) | null = null;
  const arrive = (events: readonly RunEventText[]) => {
    if (!events.length) return;
    if (liveCount + events.length > LIVE_EVENTS) {
      live.length = 0;
      liveAt = 0;
      liveCount = 0;
      overflowed = true;
    } else {
      live.push(events);
      liveCount += events.length;
    }
    wake?.();
  };
  const shiftLive = () => {
    liveCount -= live.shift()!.length;
    liveAt = 0;
  };
  // The sinks of this process hand their events over directly.
  const tap = tapOf(pubsub);
  const fromSink = arrive;
  let tapped = tap.readers.get(runId);
  if (!tapped) tap.readers.set(runId, (tapped = new Set()));
  tapped.add(fromSink);
  const untap = () => {
    tapped.delete(fromSink);
    if (!tapped.size && tap.readers.get(runId) === tapped) tap.readers.delete(runId);
  };
  // Other processes' sinks publish on PubSub (the in-process PubSub has no other process).
  let unsubscribe: () => Promise<void> = async () => undefined;
  try {
    if (!pubsub.local) {
      unsubscribe = await pubsub.subscribe(runEventsTopic(runId), (message) => {
        if (fromTap(message, tap)) return;
        let events: RunEventText[];
        try {
          events = parseEventMessage(message);
        } catch {
          // Not a message of this version or the last: the log fills the hole.
          return;
        }
        arrive(events);
      });
    }
  } catch (error) {
    untap();
    throw error;
  }
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  let last = after;
  /** Events of the log after `from` (and below `below`), a page of rows at a time. */
  const load = async (from: number, below?: number): Promise<RunEventText[]> => {
    let rows: { events: unknown }[];
    if (sql) {
      rows = below === undefined ? await sql.all(selectEventRows, [runId, from]) : await sql.all(selectEventRowsBelow, [runId, from, below]);
    } else {
      rows = await fork().find(
        RunEvent,
        below === undefined ? { runId, lastSeq: { $gt: from } } : { runId, lastSeq: { $gt: from }, seq: { $lt: below } },
        { orderBy: { seq: 'asc' }, limit: 20, fields: ['seq', 'lastSeq', 'events'] },
      );
    }
    const found: RunEventText[] = [];
    for (const row of rows) {
      for (const event of rowEvents(row.events)) if (event.seq > from && (below === undefined || event.seq < below)) found.push(textOf(event));
    }
    return found;
  };
  const final = (event: RunEventText) => event.type === 'run_complete' || event.type === 'run_waiting';
  /** Whether `batch` is the events right after `after`, in order, none of them a final one. */
  const contiguous = (batch: readonly RunEventText[], after: number): boolean => {
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i]!;
      if (event.seq !== after + 1 + i || final(event)) return false;
    }
    return true;
  };
  const ends = async (event: RunEventText): Promise<boolean> => {
    if (event.type === 'run_complete') return true;
    if (event.type === 'run_waiting' && options.endWhenWaiting) {
      const run = await fork().findOne(Run, { id: runId }, { fields: ['status', 'seqCeiling'] });
      return !run || run.status === 'waiting';
    }
    return false;
  };
  /** Sends the log's events after `last`, a page at a time; true when the stream ended (its last events wait in `out`). */
  const catchUp = async function* (): AsyncGenerator<RunEventText[], boolean> {
    let stored = await load(last);
    while (stored.length) {
      for (const event of stored) {
        out.push(event);
        last = event.seq;
        if (final(event) && (await ends(event))) return true;
      }
      yield out;
      out = [];
      stored = await load(last);
    }
    return false;
  };
  try {
    // The log up to now (the live tail is buffered meanwhile).
    if (yield* catchUp()) return yield out;
    let quietPolls = 0;
    for (;;) {
      if (options.signal?.aborted) return;
      if (overflowed) {
        // The live tail was dropped: what it held is (or is about to be) in the log.
        overflowed = false;
        if (yield* catchUp()) return yield out;
      }
      // The live tail.
      let progressed = false;
      while (live.length) {
        const batch = live[0]!;
        if (liveAt === 0 && !out.length && contiguous(batch, last)) {
          // The usual case: a whole batch that follows on: sent as it came.
          shiftLive();
          last = batch[batch.length - 1]!.seq;
          progressed = true;
          out = batch.slice();
          continue;
        }
        const event = batch[liveAt++]!;
        if (liveAt === batch.length) shiftLive();
        if (event.seq <= last) continue;
        if (event.seq > last + 1) {
          // A hole: the events before this one are (or are about to be) in the log.
          const deadline = Date.now() + gapWaitMs;
          for (;;) {
            for (const missing of await load(last, event.seq)) {
              if (missing.seq !== last + 1) break;
              out.push(missing);
              last = missing.seq;
              if (final(missing) && (await ends(missing))) return yield out;
            }
            if (last + 1 >= event.seq || Date.now() > deadline || options.signal?.aborted) break;
            if (out.length) {
              yield out;
              out = [];
            }
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
      if (live.length) continue;
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
      if (!timedOut) continue;
      // A quiet moment: the log may hold what PubSub did not deliver (a dropped message, events
      // of another process that published nothing more).
      const before = last;
      if (yield* catchUp()) return yield out;
      if (last !== before) {
        quietPolls = 0;
        continue;
      }
      if (++quietPolls >= 3) {
        // Nothing for a while: a run that ended without a final event in the log ends the stream.
        const run = await fork().findOne(Run, { id: runId }, { fields: ['status'] });
        const more = await load(last);
        if (!more.length && (!run || ['completed', 'failed', 'timed_out', 'cancelled'].includes(run.status))) return;
        quietPolls = 0;
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    untap();
    await unsubscribe();
  }
}

/** `followRunBatches`, one event at a time, with its fields as an object. */
export async function* followRun(fork: () => EntityManager, pubsub: PubSub, runId: string, after: number, options: FollowOptions): AsyncGenerator<RunEventRecord> {
  for await (const batch of followRunBatches(fork, pubsub, runId, after, options)) {
    for (const event of batch) yield { seq: event.seq, type: event.type, data: eventData(event) };
  }
}
