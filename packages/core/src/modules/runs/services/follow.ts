import type { EntityManager } from '@mikro-orm/core';
import { RunEvent } from '../entities/run-event.entity.js';
import { Run } from '../entities/run.entity.js';
import type { PreparedStatements } from '../../../ports/database.js';
import type { PubSub } from '../../../ports/pubsub.js';
import { eventData, fromTap, parseEventMessage, rowEvents, runEventsTopic, selectEventRows, selectEventRowsBelow, tapOf, textOf, type RunEventRecord, type RunEventText } from './event-text.js';

/** Events of a run's log after `from` (and below `below`), a page of rows at a time (through the ORM without `sql`). */
export async function readRunLog(fork: () => EntityManager, sql: PreparedStatements | undefined, runId: string, from: number, below?: number): Promise<RunEventText[]> {
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
  // A run whose sink is open in this process and published little so far: what it published is
  // taken from memory (and what it publishes from now on comes through the tap), so the log need
  // not be read first. Not when the reader starts before the sink's first number (the events of
  // an earlier attempt are in the log only).
  const head = tap.heads.get(runId);
  const fromHead = head?.events && head.start <= after + 1 ? head.events.filter((event) => event.seq > after) : null;
  if (fromHead) arrive(fromHead);
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
  const load = (from: number, below?: number): Promise<RunEventText[]> => readRunLog(fork, sql, runId, from, below);
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
    // The log up to now (the live tail is buffered meanwhile), unless the sink's head gave it.
    if (!fromHead && (yield* catchUp())) return yield out;
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
