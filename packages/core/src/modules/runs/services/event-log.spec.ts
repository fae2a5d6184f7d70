import type { EntityManager } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { sqlInsertRows, type PreparedStatements, type RowSink, type SqlRowTable, type SqlStatement, type SqlValue } from '../../../ports/database.js';
import { InProcessPubSub, type PubSub, type PubSubListener } from '../../../ports/pubsub.js';
import { ndjsonLines, sseFrames } from '../routes.js';
import { followRunBatches, parseEventLine, parseEventMessage, ROW_EVENTS, runEventsTopic, SEQ_BLOCK, StoredEventSink, type RunEventText } from './event-log.js';
import type { GroupCommit, GroupWork } from '../../../kernel/group-commit.js';
import { SqlRunStore } from '../store/sql-run-store.js';
import { HEAD_EVENTS, rowEvents, splitJsonStrings } from './event-text.js';
import { RunSuperseded } from './attempt-errors.js';

/** The log's table in memory, behind the statements the event log uses. */
class MemoryLog implements PreparedStatements {
  readonly dialect = 'sqlite' as const;
  rows: { runId: string; seq: number; lastSeq: number; events: string }[] = [];
  reads = 0;
  /** Holds the inserts back until released (a slow commit). */
  gate: Promise<void> | null = null;

  async all<R>(statement: SqlStatement, params: readonly SqlValue[] = []): Promise<R[]> {
    this.reads++;
    const [runId, after, below] = params as [string, number, number | undefined];
    expect(statement.text).toMatch(/^select/);
    return this.rows
      .filter((row) => row.runId === runId && row.lastSeq > after && (below === undefined || row.seq < below))
      .sort((x, y) => x.seq - y.seq)
      .slice(0, 20)
      .map((row) => ({ seq: row.seq, last_seq: row.lastSeq, events: row.events }) as R);
  }

  async first<R>(statement: SqlStatement, params?: readonly SqlValue[]): Promise<R | undefined> {
    return (await this.all<R>(statement, params))[0];
  }

  async run(statement: SqlStatement, params: readonly SqlValue[] = []): Promise<number> {
    expect(statement.text).toMatch(/^insert into "run_events"/);
    if (this.gate) await this.gate;
    const [runId, seq, lastSeq, events] = params as [string, number, number, string];
    if (this.rows.some((row) => row.runId === runId && row.seq === seq)) throw new Error('duplicate key');
    this.rows.push({ runId, seq, lastSeq, events });
    return 1;
  }

  /** Every stored event, in order. */
  events(runId: string): { seq: number; type: string; data: Record<string, unknown> }[] {
    return this.rows
      .filter((row) => row.runId === runId)
      .sort((x, y) => x.seq - y.seq)
      .flatMap((row) => rowEvents(row.events));
  }
}

/**
 * A GroupCommit that runs each unit at once and inserts its rows into `log` at once; the
 * transaction's manager only answers `nativeUpdate` (the sequence reservation).
 */
const groupOf = (log: MemoryLog) => {
  const rows: RowSink = { insertRow: async (_tx, table, values) => void (await log.run(sqlInsertRows(table, 1), values)) };
  const tx = {} as unknown as EntityManager;
  return {
    run: (work: GroupWork<unknown>) => work(tx, true, rows),
    insertRow: rows.insertRow,
    insertOne: (table: SqlRowTable, values: readonly SqlValue[]) => rows.insertRow(tx, table, values),
    // The reservation of sequence numbers, the one other statement the sink writes.
    runOne: async (statement: SqlStatement) => (expect(statement.text).toMatch(/^update "runs" set "seq_ceiling"/), 1),
  } as unknown as GroupCommit;
};
/** `groupOf(log)` whose reservations of sequence numbers (`update "runs" set "seq_ceiling" = ? where "id" = ? [and "attempt" = ?]`) go to `reserve`. */
const reservingGroup = (log: MemoryLog, reserve: (where: unknown, data: { seqCeiling: number }) => Promise<number>) =>
  ({
    ...groupOf(log),
    runOne: (statement: SqlStatement, params: readonly SqlValue[]) => {
      expect(statement.text).toMatch(/^update "runs" set "seq_ceiling"/);
      const [seqCeiling, id, attempt] = params as [number, string, number | undefined];
      return reserve(attempt === undefined ? { id } : { id, attempt }, { seqCeiling });
    },
  }) as unknown as GroupCommit;
/** The run store of the SQL databases, writing through `group` on `log`. */
const storeOf = (group: GroupCommit, log: MemoryLog) => new SqlRunStore({ fork: fork(), sql: log, pubsub: new InProcessPubSub() }, { group });
/** What the reader asks the ORM (the run's status at a quiet moment). */
const fork = (status = 'running') => () => ({ findOne: async () => ({ status, seqCeiling: 0 }) }) as unknown as EntityManager;

/** A process' own PubSub client on a shared bus (as Redis clients of two processes are): not the in-process PubSub. */
class ProcessPubSub implements PubSub {
  published = 0;
  constructor(private readonly bus: InProcessPubSub) {}
  publish(topic: string, message: Uint8Array | string): Promise<void> {
    this.published++;
    return this.bus.publish(topic, message);
  }
  subscribe(topic: string, listener: PubSubListener): Promise<() => Promise<void>> {
    return this.bus.subscribe(topic, listener);
  }
  async close(): Promise<void> {}
}

const RUN = '00000000-0000-4000-8000-000000000001';
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function collect(stream: AsyncIterable<RunEventText[]>, until = (events: RunEventText[]) => events.at(-1)?.type === 'run_complete'): Promise<RunEventText[]> {
  const out: RunEventText[] = [];
  for await (const batch of stream) {
    out.push(...batch);
    if (until(out)) break;
  }
  return out;
}

describe('event lines and PubSub messages', () => {
  it('reads its own lines without parsing the fields, and any other JSON object of the same meaning', () => {
    expect(parseEventLine('{"seq":12,"type":"block_chunk","data":{"blockId":"c1","delta":"a}\\n\\"b"}}')).toEqual({ seq: 12, type: 'block_chunk', json: '{"blockId":"c1","delta":"a}\\n\\"b"}' });
    expect(parseEventLine('{"type":"run_start","seq":1,"data":{"runId":"r"}}')).toEqual({ seq: 1, type: 'run_start', json: '{"runId":"r"}' });
    expect(parseEventLine('{"seq":3,"type":"run_complete","data":{}}')).toEqual({ seq: 3, type: 'run_complete', json: '{}' });
  });

  it('reads the current message form (header line, event lines) and the array form of earlier versions', () => {
    const current = '{"format":"run-events","version":2}\n{"seq":1,"type":"run_start","data":{"runId":"r"}}\n{"seq":2,"type":"block_chunk","data":{"delta":"x"}}';
    expect(parseEventMessage(current)).toEqual([
      { seq: 1, type: 'run_start', json: '{"runId":"r"}' },
      { seq: 2, type: 'block_chunk', json: '{"delta":"x"}' },
    ]);
    const earlier = JSON.stringify([{ seq: 1, type: 'run_start', data: { runId: 'r' } }]);
    expect(parseEventMessage(Buffer.from(earlier))).toEqual([{ seq: 1, type: 'run_start', json: '{"runId":"r"}' }]);
  });

  it('writes SSE frames and NDJSON lines from the event text, equal to serializing the fields', () => {
    const events = [
      { seq: 1, type: 'run_start', data: { runId: 'r', documentId: null } },
      { seq: 2, type: 'block_chunk', data: { blockId: 'c1', delta: 'line\nbreak "quoted" ✓' } },
      { seq: 3, type: 'run_complete', data: {} },
    ];
    const texts = events.map((e) => ({ seq: e.seq, type: e.type, json: JSON.stringify(e.data) }));
    expect(sseFrames(texts)).toBe(events.map((e) => `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`).join(''));
    expect(ndjsonLines(texts)).toBe(events.map((e) => `${JSON.stringify({ seq: e.seq, type: e.type, ...e.data })}\n`).join(''));
  });
});

describe('StoredEventSink', () => {
  it('publishes each turn\'s events as one message and stores chunks in rows of 2,000 as they fill', async () => {
    const log = new MemoryLog();
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: RUN, seqCeiling: 0 }, 60_000);
    sink.emit('run_start', { runId: RUN });
    for (let i = 0; i < ROW_EVENTS * 2 + 10; i++) sink.emit('block_chunk', { blockId: 'c1', delta: `d${i}` });
    await tick();
    // The long flushMs has not passed: only the full rows are stored.
    expect(log.rows.map((r) => [r.seq, r.lastSeq])).toEqual([
      [1, ROW_EVENTS],
      [ROW_EVENTS + 1, 2 * ROW_EVENTS],
    ]);
    // Published as they came (a full row's flush publishes what waited), in order, once each.
    const published = messages.flatMap(parseEventMessage);
    expect(published.map((e) => e.seq)).toEqual(Array.from({ length: 2 * ROW_EVENTS + 11 }, (_, i) => i + 1));
    expect(messages.length).toBeLessThanOrEqual(3);
    sink.emitStored('run_complete', { status: 'completed' });
    await tick();
    expect(messages.flatMap(parseEventMessage).at(-1)!.type).toBe('block_chunk');
    await sink.flush();
    await tick();
    // run_complete goes out once stored, after every event before it.
    expect(messages.flatMap(parseEventMessage).at(-1)).toEqual({ seq: 2 * ROW_EVENTS + 12, type: 'run_complete', json: '{"status":"completed"}' });
    const stored = log.events(RUN);
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 2 * ROW_EVENTS + 12 }, (_, i) => i + 1));
    expect(stored[5]).toEqual({ seq: 6, type: 'block_chunk', data: { blockId: 'c1', delta: 'd4' } });
  });

  it('emitChunk publishes and stores the very text of emit(\'block_chunk\', { blockId, delta })', async () => {
    const pairs: [string, string][] = [
      ['c1', 'plain'],
      ['c1', 'line\nbreak "quoted" \\ ✓ \u2028 \u0000'],
      ['b "2"', ''],
      ['c1', 'back to the first block'],
    ];
    const texts: string[][] = [];
    for (const chunked of [false, true]) {
      const log = new MemoryLog();
      const pubsub = new InProcessPubSub();
      const messages: string[] = [];
      await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
      const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: RUN, seqCeiling: 0 }, 60_000);
      for (const [blockId, delta] of pairs) void (chunked ? sink.emitChunk(blockId, delta) : sink.emit('block_chunk', { blockId, delta }));
      await sink.flush();
      texts.push([...messages.flatMap(parseEventMessage).map((e) => e.json), ...log.events(RUN).map((e) => JSON.stringify(e))]);
      expect(log.events(RUN).map((e) => e.data)).toEqual(pairs.map(([blockId, delta]) => ({ blockId, delta })));
      // The log keeps the sink's chunks compact (a run of one block's chunks is one array), others as lines.
      expect(log.rows[0]!.events.startsWith(chunked ? '[["c",1,"c1","plain",' : '[{"seq":1,"type":"block_chunk","data":{"blockId":"c1","delta":"plain"}}')).toBe(true);
    }
    expect(texts[1]).toEqual(texts[0]);
  });

  it('emitChunkBodies publishes and stores the very events emitChunk does, across full rows and the end of the reserved numbers', async () => {
    const odd = ['line\nbreak "quoted" \\ ✓ \u2028 \u0000', '","', '\ud800', ''];
    const deltas = Array.from({ length: SEQ_BLOCK + ROW_EVENTS + 17 }, (_, i) => (i % 997 === 0 ? odd[(i / 997) % odd.length]! : `d${i}`));
    const results: { published: [number, string][]; stored: string[] }[] = [];
    for (const batched of [false, true]) {
      const log = new MemoryLog();
      const pubsub = new InProcessPubSub();
      const messages: string[] = [];
      await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
      const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: RUN, seqCeiling: 0 }, 60_000);
      sink.emit('block_start', { blockId: 'c1' });
      if (!batched) for (const delta of deltas) sink.emitChunk('c1', delta);
      else {
        // Batches of several sizes, as a sandbox sends them.
        for (let at = 0, size = 1; at < deltas.length; at += size, size = (size * 7) % 3001) {
          const split = splitJsonStrings(JSON.stringify(deltas.slice(at, at + size)))!;
          expect(sink.emitChunkBodies('c1', split.bodies)).toBe(1 + Math.min(at + size, deltas.length));
        }
      }
      await sink.flush();
      await tick();
      results.push({ published: messages.flatMap(parseEventMessage).map((e) => [e.seq, e.json]), stored: log.events(RUN).map((e) => JSON.stringify(e)) });
      expect(log.events(RUN).slice(1).map((e) => (e.data as { delta: string }).delta)).toEqual(deltas);
    }
    expect(results[1]!.published).toHaveLength(deltas.length + 1);
    expect(results[1]).toEqual(results[0]);
  });

  it('takes the stores asked for while one is under way into one transaction, and answers each', async () => {
    const log = new MemoryLog();
    let transactions = 0;
    // Stores of the log (the reservations of numbers ahead are `atomic` units of their own).
    const inner = groupOf(log);
    const counting = {
      run: (work: GroupWork<unknown>, options?: { atomic?: boolean }) => (options?.atomic ? undefined : transactions++, inner.run(work)),
      insertRow: inner.insertRow.bind(inner),
      insertOne: (table: SqlRowTable, values: readonly SqlValue[]) => (transactions++, inner.insertOne(table, values)),
      runOne: inner.runOne.bind(inner),
    } as unknown as GroupCommit;
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(counting, log), pubsub, { id: RUN, seqCeiling: 0 }, 60_000);
    let release!: () => void;
    log.gate = new Promise((resolve) => (release = resolve));
    // The first full row starts its store (held back by the gate); three more rows, an event
    // published once stored, and a checkpoint whose write does not take wait behind it.
    for (let i = 0; i < ROW_EVENTS; i++) sink.emitChunk('c1', `d${i}`);
    await tick();
    expect(transactions).toBe(1);
    for (let i = ROW_EVENTS; i < ROW_EVENTS * 4; i++) sink.emitChunk('c1', `d${i}`);
    sink.emitStored('kept', {});
    const flushed = sink.flush();
    sink.emitStored('dropped', {});
    const checkpoint = sink.flushWith(async () => 'not taken', (answer) => answer !== 'not taken');
    const after = sink.flush();
    await tick();
    expect(transactions).toBe(1);
    release();
    log.gate = null;
    await expect(flushed).resolves.toBeUndefined();
    await expect(checkpoint).resolves.toBe('not taken');
    await expect(after).resolves.toBeUndefined();
    // The first row alone, then the rest with the checkpoint; the empty flush after it stores nothing.
    expect(transactions).toBe(2);
    const stored = log.events(RUN);
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: ROW_EVENTS * 4 + 1 }, (_, i) => i + 1));
    expect(stored.at(-1)!.type).toBe('kept');
    expect(log.rows.every((row) => JSON.parse(row.events).length <= ROW_EVENTS)).toBe(true);
    await tick();
    const published = messages.flatMap(parseEventMessage).map((e) => e.type);
    expect(published.filter((type) => type !== 'block_chunk')).toEqual(['kept']);
    expect(published).toHaveLength(ROW_EVENTS * 4 + 1);
  });

  it('a failed store fails the stores it took with it, and every store after them', async () => {
    const log = new MemoryLog();
    const failing = { run: async () => Promise.reject(new Error('disk full')), insertOne: async () => Promise.reject(new Error('disk full')) } as unknown as GroupCommit;
    const sink = StoredEventSink.reserved(storeOf(failing, log), new InProcessPubSub(), { id: RUN, seqCeiling: 0 }, 60_000);
    sink.emitChunk('c1', 'a');
    const first = sink.flush();
    sink.emitChunk('c1', 'b');
    const second = sink.flush();
    await expect(first).rejects.toThrow('disk full');
    await expect(second).rejects.toThrow('disk full');
    sink.emitChunk('c1', 'c');
    await expect(sink.flush()).rejects.toThrow('disk full');
  });

  it('reserves the next block of numbers ahead: events past the reserved ones are not held back for that write', async () => {
    const log = new MemoryLog();
    const ceilings: number[] = [];
    let hang = false;
    const reserving = reservingGroup(log, async (_where, data) => {
      ceilings.push(data.seqCeiling);
      // From here on a reservation never commits.
      if (hang) await new Promise(() => undefined);
      return 1;
    });
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(reserving, log), pubsub, { id: RUN, seqCeiling: 0 }, 60_000);
    for (let i = 0; i < SEQ_BLOCK * 0.6; i++) sink.emitChunk('c1', `${i}`);
    await tick();
    expect(ceilings).toEqual([2 * SEQ_BLOCK]);
    hang = true;
    for (let i = SEQ_BLOCK * 0.6; i < SEQ_BLOCK + 100; i++) sink.emitChunk('c1', `${i}`);
    await tick();
    const published = messages.flatMap(parseEventMessage).map((e) => e.seq);
    expect(published).toEqual(Array.from({ length: SEQ_BLOCK + 100 }, (_, i) => i + 1));
    expect(Math.max(...published)).toBeLessThanOrEqual(ceilings[0]!);
    await sink.flush();
    expect(log.events(RUN)).toHaveLength(SEQ_BLOCK + 100);
  });

  it('reserves numbers under its attempt: once another attempt took the run over, it publishes and stores nothing past its numbers and fails as superseded', async () => {
    const log = new MemoryLog();
    const fences: unknown[] = [];
    const refusing = reservingGroup(log, async (where) => {
      fences.push(where);
      // Another attempt holds the run: the fenced update changes no row.
      return 0;
    });
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(refusing, log), pubsub, { id: RUN, seqCeiling: 0, attempt: 3 }, 60_000);
    for (let i = 0; i < SEQ_BLOCK + 100; i++) sink.emitChunk('c1', `${i}`);
    await tick();
    await tick();
    expect(fences).toContainEqual({ id: RUN, attempt: 3 });
    const published = messages.flatMap(parseEventMessage).map((e) => e.seq);
    expect(Math.max(...published)).toBe(SEQ_BLOCK);
    await expect(sink.flush()).rejects.toBeInstanceOf(RunSuperseded);
    expect(Math.max(...log.events(RUN).map((e) => e.seq))).toBeLessThanOrEqual(SEQ_BLOCK);
    // Nothing holds its producers back any more, and nothing more goes out.
    expect(sink.backlog()).toBeUndefined();
    sink.emitChunk('c1', 'late');
    await tick();
    expect(Math.max(...messages.flatMap(parseEventMessage).map((e) => e.seq))).toBe(SEQ_BLOCK);
  });

  it('a reservation that fails fails the sink: no retry in a loop, nothing published or stored past its numbers', async () => {
    const log = new MemoryLog();
    let calls = 0;
    const failing = reservingGroup(log, async () => {
      calls++;
      // Bounded so that a sink retrying at once ends the loop here rather than hanging the test.
      if (calls > 1_000) return 1;
      throw new Error('database is locked');
    });
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(failing, log), pubsub, { id: RUN, seqCeiling: 0, attempt: 1 }, 60_000);
    for (let i = 0; i < SEQ_BLOCK + 100; i++) sink.emitChunk('c1', `${i}`);
    await tick();
    await tick();
    // The reservation ahead (at half the block) failed: the sink failed there and reserved nothing more.
    expect(calls).toBe(1);
    await expect(sink.flush()).rejects.toThrow('database is locked');
    expect(Math.max(...messages.flatMap(parseEventMessage).map((e) => e.seq))).toBeLessThanOrEqual(SEQ_BLOCK);
    expect(sink.backlog()).toBeUndefined();
  });

  it('publishes every event held back by a slow reservation, however many (a spread of them into a push overflowed the stack)', async () => {
    const log = new MemoryLog();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The reservation ahead waits (a busy database) while the code goes on emitting.
    const slow = reservingGroup(log, async () => {
      await released;
      return 1;
    });
    const pubsub = new InProcessPubSub();
    const messages: string[] = [];
    await pubsub.subscribe(runEventsTopic(RUN), (m) => void messages.push(String(m)));
    const sink = StoredEventSink.reserved(storeOf(slow, log), pubsub, { id: RUN, seqCeiling: 0, attempt: 1 }, 60_000);
    const held = 200_000;
    const bodies = Array.from({ length: 1_000 }, (_, i) => `d${i}`);
    for (let n = 0; n < SEQ_BLOCK + held; n += bodies.length) sink.emitChunkBodies('c1', bodies);
    await tick();
    expect(Math.max(...messages.flatMap(parseEventMessage).map((e) => e.seq))).toBe(SEQ_BLOCK);
    // The numbers come, for what waited too: everything goes out, in order, once each.
    release();
    await sink.flush();
    await tick();
    const seqs = messages.flatMap(parseEventMessage).map((e) => e.seq);
    expect(seqs.length).toBe(SEQ_BLOCK + held);
    expect(seqs.every((seq, i) => seq === i + 1)).toBe(true);
  });

  it('stores a trickle of chunks at most flushMs late', async () => {
    const log = new MemoryLog();
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), new InProcessPubSub(), { id: RUN, seqCeiling: 0 }, 15);
    sink.emit('block_chunk', { blockId: 'c1', delta: 'a' });
    sink.emit('block_chunk', { blockId: 'c1', delta: 'b' });
    expect(log.rows).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(log.events(RUN).map((e) => e.data.delta)).toEqual(['a', 'b']);
  });
});

describe('followRunBatches', () => {
  it('reads the log once at the start, then follows PubSub without reading it again', async () => {
    const log = new MemoryLog();
    const bus = new InProcessPubSub();
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), new ProcessPubSub(bus), { id: RUN, seqCeiling: 0 }, 5);
    sink.emit('run_start', { runId: RUN });
    await sink.flush();
    const reading = collect(followRunBatches(fork(), new ProcessPubSub(bus), RUN, 0, { endWhenWaiting: true, sql: log }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const readsAtStart = log.reads;
    for (let burst = 0; burst < 20; burst++) {
      for (let i = 0; i < 100; i++) sink.emit('block_chunk', { blockId: 'c1', delta: `${burst}.${i}` });
      await tick();
    }
    sink.emitStored('run_complete', {});
    await sink.flush();
    const events = await reading;
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 2002 }, (_, i) => i + 1));
    expect(log.reads).toBe(readsAtStart);
  });

  it.each([
    ['another process', (bus: InProcessPubSub): [PubSub, PubSub] => [new ProcessPubSub(bus), new ProcessPubSub(bus)]],
    ['the same process', (bus: InProcessPubSub): [PubSub, PubSub] => [bus, bus]],
  ])('a reader in %s that joins mid-run gets exactly the events after `after`: stored, published-but-not-yet-stored, and live', async (_, pubsubs) => {
    const log = new MemoryLog();
    const [writer, reader] = pubsubs(new InProcessPubSub());
    const pubsub = writer;
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: RUN, seqCeiling: 0 }, 30);
    sink.emit('run_start', { runId: RUN });
    for (let i = 0; i < ROW_EVENTS + 500; i++) sink.emit('block_chunk', { blockId: 'c1', delta: `${i}` });
    await tick();
    // One row is stored; 501 events are published and wait for the timer. A reader joins now,
    // after an event of the stored row.
    expect(log.rows).toHaveLength(1);
    const reading = collect(followRunBatches(fork(), reader, RUN, 1_500, { endWhenWaiting: true, sql: log }));
    for (let i = 0; i < 300; i++) sink.emit('block_chunk', { blockId: 'c1', delta: `late ${i}` });
    await tick();
    sink.emitStored('run_complete', {});
    await sink.flush();
    const events = await reading;
    const last = ROW_EVENTS + 500 + 300 + 2;
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: last - 1_500 }, (_, i) => 1_501 + i));
    expect(events.map((e) => e.json)).toEqual(log.events(RUN).slice(1_500).map((e) => JSON.stringify(e.data)));
  });

  it('hands events to readers of the same PubSub in this process directly, skipping its own messages', async () => {
    const log = new MemoryLog();
    const bus = new InProcessPubSub();
    const here = new ProcessPubSub(bus);
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), here, { id: RUN, seqCeiling: 0 }, 5);
    const local = collect(followRunBatches(fork(), here, RUN, 0, { endWhenWaiting: true, sql: log }));
    const remote = collect(followRunBatches(fork(), new ProcessPubSub(bus), RUN, 0, { endWhenWaiting: true, sql: log }));
    let parsedHere = 0;
    // The local reader's subscription sees the messages, and drops them on their header alone.
    await here.subscribe(runEventsTopic(RUN), (message) => void (parsedHere += String(message).split('\n').length - 1));
    await tick();
    sink.emit('run_start', { runId: RUN });
    for (let i = 0; i < 500; i++) sink.emit('block_chunk', { blockId: 'c1', delta: `${i}` });
    await tick();
    sink.emitStored('run_complete', {});
    await sink.flush();
    const [a, b] = await Promise.all([local, remote]);
    expect(a.map((e) => e.seq)).toEqual(Array.from({ length: 502 }, (_, i) => i + 1));
    expect(b).toEqual(a);
    expect(parsedHere).toBe(502);
    // With the in-process PubSub and no one else listening, nothing is published at all.
    const quiet = new InProcessPubSub();
    const published: unknown[] = [];
    const original = quiet.publish.bind(quiet);
    quiet.publish = (topic, message) => (published.push(message), original(topic, message));
    const other = '00000000-0000-4000-8000-000000000002';
    const inProcess = StoredEventSink.reserved(storeOf(groupOf(log), log), quiet, { id: other, seqCeiling: 0 }, 5);
    const reading = collect(followRunBatches(fork(), quiet, other, 0, { endWhenWaiting: true, sql: log }));
    await tick();
    inProcess.emit('run_start', { runId: other });
    inProcess.emitStored('run_complete', {});
    await inProcess.flush();
    expect((await reading).map((e) => e.type)).toEqual(['run_start', 'run_complete']);
    expect(published).toEqual([]);
  });

  it('gives a reader of a run whose sink is open here what it published from memory, reading no log; past its head, before its first number, or once closed, the log', async () => {
    const log = new MemoryLog();
    const pubsub = new InProcessPubSub();
    const sink = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: RUN, seqCeiling: 0 }, 5);
    sink.emit('run_start', { runId: RUN });
    for (let i = 0; i < 10; i++) sink.emitChunk('c1', `${i}`);
    // Published (and the first row not yet stored: the reader could not find them in the log).
    await tick();
    const reads = log.reads;
    const fromStart = collect(followRunBatches(fork(), pubsub, RUN, 0, { endWhenWaiting: true, sql: log }));
    const fromFive = collect(followRunBatches(fork(), pubsub, RUN, 5, { endWhenWaiting: true, sql: log }));
    for (let i = 10; i < 20; i++) sink.emitChunk('c1', `${i}`);
    sink.emitStored('run_complete', {});
    await sink.flush();
    const [all, later] = await Promise.all([fromStart, fromFive]);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    expect(all.map((e) => e.json)).toEqual(log.events(RUN).map((e) => JSON.stringify(e.data)));
    expect(later.map((e) => e.seq)).toEqual(Array.from({ length: 17 }, (_, i) => i + 6));
    expect(log.reads).toBe(reads);
    // Closed: a reader that comes now reads the log.
    await sink.close();
    expect((await collect(followRunBatches(fork(), pubsub, RUN, 20, { endWhenWaiting: true, sql: log }))).map((e) => e.seq)).toEqual([21, 22]);
    expect(log.reads).toBeGreaterThan(reads);

    // A later attempt (numbers from 101): a reader from the start needs the earlier attempt's events, in the log only.
    const second = '00000000-0000-4000-8000-000000000003';
    await log.run({ name: 'x', text: 'insert into "run_events"' }, [second, 1, 100, JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ seq: i + 1, type: 'block_chunk', data: { delta: `${i}` } }))), null]);
    const resumed = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: second, seqCeiling: 100 }, 5);
    resumed.emit('block_start', { blockId: 'c2' });
    await tick();
    const readsBefore = log.reads;
    const whole = collect(followRunBatches(fork(), pubsub, second, 0, { endWhenWaiting: true, sql: log }));
    resumed.emitStored('run_complete', {});
    await resumed.flush();
    expect((await whole).map((e) => e.seq)).toEqual(Array.from({ length: 102 }, (_, i) => i + 1));
    expect(log.reads).toBeGreaterThan(readsBefore);

    // More published than the head keeps: the log (and the live tail), each event once.
    const third = '00000000-0000-4000-8000-000000000004';
    const busy = StoredEventSink.reserved(storeOf(groupOf(log), log), pubsub, { id: third, seqCeiling: 0 }, 5);
    for (let i = 0; i < HEAD_EVENTS + 1; i++) busy.emitChunk('c1', `${i}`);
    await tick();
    const readsThen = log.reads;
    const past = collect(followRunBatches(fork(), pubsub, third, 0, { endWhenWaiting: true, sql: log }));
    busy.emitStored('run_complete', {});
    await busy.flush();
    expect((await past).map((e) => e.seq)).toEqual(Array.from({ length: HEAD_EVENTS + 2 }, (_, i) => i + 1));
    expect(log.reads).toBeGreaterThan(readsThen);
  });

  it('fills a hole from the log (a message PubSub dropped), each event once', async () => {
    const log = new MemoryLog();
    const pubsub = new InProcessPubSub();
    const reading = collect(followRunBatches(fork(), new ProcessPubSub(pubsub), RUN, 0, { endWhenWaiting: true, sql: log }));
    await tick();
    const line = (seq: number, type: string, data: object) => JSON.stringify({ seq, type, data });
    const store = (from: number, to: number) =>
      log.run({ name: 'x', text: 'insert into "run_events"' }, [RUN, from, to, `[${Array.from({ length: to - from + 1 }, (_, i) => line(from + i, 'block_chunk', { delta: from + i })).join(',')}]`, null]);
    await store(1, 4);
    // 1..2 arrive; 3..4 are lost; 5 arrives (in the array form of an earlier version).
    await pubsub.publish(runEventsTopic(RUN), `{"format":"run-events","version":2}\n${line(1, 'block_chunk', { delta: 1 })}\n${line(2, 'block_chunk', { delta: 2 })}`);
    await tick();
    await pubsub.publish(runEventsTopic(RUN), JSON.stringify([{ seq: 5, type: 'block_chunk', data: { delta: 5 } }]));
    await pubsub.publish(runEventsTopic(RUN), `{"format":"run-events","version":2}\n${line(4, 'block_chunk', { delta: 4 })}\n${line(6, 'run_complete', {})}`);
    const events = await reading;
    expect(events.map((e) => [e.seq, e.json])).toEqual([
      [1, '{"delta":1}'],
      [2, '{"delta":2}'],
      [3, '{"delta":3}'],
      [4, '{"delta":4}'],
      [5, '{"delta":5}'],
      [6, '{}'],
    ]);
  });

  it('reads the log after a quiet moment: a final event whose message was lost still ends the stream', async () => {
    const log = new MemoryLog();
    const pubsub = new InProcessPubSub();
    const reading = collect(followRunBatches(fork(), pubsub, RUN, 0, { endWhenWaiting: true, sql: log, pollMs: 30 }));
    await tick();
    await log.run({ name: 'x', text: 'insert into "run_events"' }, [RUN, 1, 2, '[{"seq":1,"type":"run_start","data":{}},{"seq":2,"type":"run_complete","data":{}}]', null]);
    const events = await reading;
    expect(events.map((e) => e.type)).toEqual(['run_start', 'run_complete']);
  });
});
