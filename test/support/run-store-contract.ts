import { raw, type EntityManager } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Run, type RunCreditHold, type RunFinalRecord, type RunLogEvent, type RunSettlement, type RunStore } from '@trellis/core';

/**
 * The RunStore port's contract as tests, for every implementation (in the spirit of LangGraph
 * JS's checkpoint-validation suite): call `describeRunStoreContract` with a factory that gives a
 * store on a fresh, migrated database, a way to fork its entity manager, and its teardown.
 */
export interface RunStoreUnderTest {
  store: RunStore;
  fork(): EntityManager;
  close(): Promise<void>;
}

let ids = 0;
const newId = () => `00000000-0000-7000-8000-${(Date.now() % 1e6).toString().padStart(6, '0')}${(++ids).toString().padStart(6, '0')}`;

/** A new queued run's record, every column (as the runtime inserts it). */
function record(id = newId()): Record<string, unknown> & { id: string } {
  const now = new Date();
  return {
    id, documentId: null, projectId: null, teamId: null, userId: newId(), source: 'document', version: null, status: 'queued',
    inputs: {}, content: { type: 'doc', content: [] }, cursor: 0, sessions: [], ctx: [], output: null, error: null,
    usage: { models: {}, sandboxMs: 0 }, onError: 'stop', timeoutSeconds: 60, timedOut: false, reservationId: null,
    reservedCredits: 0, usedCredits: null, seqCeiling: 0, attempt: 0, waiting: null, answer: null, cancelRequested: false,
    heartbeatAt: now, startedAt: null, deadlineAt: null, finishedAt: null, durationMs: null, idempotencyKey: null,
    idempotencyScope: null, requestHash: null, createdAt: now, updatedAt: now,
  };
}

const events = (from: number, to: number, last?: string): RunLogEvent[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, type: from + i === to && last ? last : 'block_chunk', json: JSON.stringify({ blockId: 'b', delta: `d${from + i}` }) }));

const final = (): RunFinalRecord => ({ cursor: 1, sessions: [], ctx: [], usage: { models: {}, sandboxMs: 0 }, status: 'completed', output: 'ok', error: null, timedOut: false, finishedAt: new Date(), durationMs: 5, updatedAt: new Date() });

async function collect(stream: AsyncIterable<RunLogEvent[]>): Promise<RunLogEvent[]> {
  const out: RunLogEvent[] = [];
  for await (const batch of stream) out.push(...batch);
  return out;
}

export function describeRunStoreContract(name: string, factory: () => Promise<RunStoreUnderTest>): void {
  describe(`RunStore contract: ${name}`, () => {
    let t: RunStoreUnderTest;
    beforeAll(async () => {
      t = await factory();
    });
    afterAll(() => t?.close());

    const read = (id: string) => t.fork().findOne(Run, { id }, { refresh: true });
    /** A counter kept in a run row's cursor: a write that counts only if its transaction commits. */
    const counter = async () => {
      const id = newId();
      await t.store.create(record(id), null);
      return { bump: (tx: EntityManager) => tx.nativeUpdate(Run, { id }, { cursor: raw('cursor + 1') } as never), value: async () => (await read(id))!.cursor };
    };
    const hold = (count: (tx: EntityManager) => Promise<unknown>, amount = 3): RunCreditHold => ({
      amount,
      newId,
      wroteNothing: () => false,
      take: async (tx, _alone, _rows, id) => {
        await count(tx);
        return id ?? newId();
      },
    });

    it('stores a run with its hold in one transaction: both, or neither', async () => {
      const held = await counter();
      const run = record();
      const reservationId = await t.store.create(run, hold(held.bump));
      expect(reservationId).toEqual(expect.any(String));
      expect(await read(run.id)).toMatchObject({ status: 'queued', reservationId, reservedCredits: 3, attempt: 0 });
      expect(await held.value()).toBe(1);
      // The same id again: the insert fails, and the hold taken in its transaction is rolled back.
      await expect(t.store.create(record(run.id), hold(held.bump))).rejects.toThrow();
      expect(await held.value()).toBe(1);
      expect(await t.store.create(record(), null)).toBeNull();
    });

    it('fences attempts: a claim of a superseded attempt takes nothing', async () => {
      const run = record();
      await t.store.create(run, null);
      const now = new Date();
      const claim = { startedAt: now, deadlineAt: new Date(now.getTime() + 60_000), now, seqCeiling: 10 };
      expect(await t.store.claim({ id: run.id, attempt: 0 }, claim)).toBe(true);
      expect(await t.store.claim({ id: run.id, attempt: 0 }, claim)).toBe(false);
      expect(await read(run.id)).toMatchObject({ status: 'running', attempt: 1, seqCeiling: 10 });
      expect(await t.store.claim({ id: run.id, attempt: 1 }, { ...claim, seqCeiling: 20 })).toBe(true);
      expect(await read(run.id)).toMatchObject({ attempt: 2, seqCeiling: 20 });
      expect(await t.store.setSeqCeiling({ id: run.id, attempt: 1 }, 99)).toBe(false);
      expect((await read(run.id))!.seqCeiling).toBe(20);
      expect(await t.store.setSeqCeiling({ id: run.id, attempt: 2 }, 15)).toBe(true);
      expect((await read(run.id))!.seqCeiling).toBe(15);
    });

    it('keeps the log in order, read after any sequence number', async () => {
      const run = record();
      await t.store.create(run, null);
      await t.store.append(run.id, events(1, 3));
      await t.store.append(run.id, events(4, 4));
      await t.store.append(run.id, events(5, 9));
      for (let after = 0; after <= 9; after++) {
        const seen: number[] = [];
        for (let page = await t.store.read(run.id, after); page.length; page = await t.store.read(run.id, seen.at(-1)!)) seen.push(...page.map((e) => e.seq));
        expect(seen).toEqual(Array.from({ length: 9 - after }, (_, i) => after + 1 + i));
      }
      expect((await t.store.read(run.id, 2, 5)).map((e) => e.seq)).toEqual([3, 4]);
      const [event] = await t.store.read(run.id, 4, 6);
      expect(event).toMatchObject({ seq: 5, type: 'block_chunk' });
      expect(JSON.parse(event!.json)).toEqual({ blockId: 'b', delta: 'd5' });
    });

    it('stores an append with its write in one transaction; conditional events only when the write took', async () => {
      const run = record();
      await t.store.create(run, null);
      const batch = events(1, 3);
      const answer = await t.store.append(run.id, batch, { write: async () => 0, keep: (n) => n > 0, conditional: [batch[2]!] });
      expect(answer).toBe(0);
      expect((await t.store.read(run.id, 0)).map((e) => e.seq)).toEqual([1, 2]);
      await expect(t.store.append(run.id, events(3, 4), { write: async () => Promise.reject(new Error('write failed')) })).rejects.toThrow('write failed');
      expect((await t.store.read(run.id, 0)).map((e) => e.seq)).toEqual([1, 2]);
    });

    it('settles exactly once: never for a superseded attempt, never twice', async () => {
      const settled = await counter();
      const settlement = (): RunSettlement => ({ used: 2, apply: async (tx) => (await settled.bump(tx), true) });
      const run = record();
      await t.store.create(run, null);
      const now = new Date();
      const claim = { startedAt: now, deadlineAt: new Date(now.getTime() + 60_000), now, seqCeiling: 100 };
      await t.store.claim({ id: run.id, attempt: 0 }, claim);
      await t.store.claim({ id: run.id, attempt: 1 }, claim);
      // Attempt 1 was superseded by attempt 2: its final write takes nothing, its settlement is not applied, its run_complete not stored.
      const stale = events(1, 1, 'run_complete');
      expect(await t.store.append(run.id, stale, { write: t.store.finishWork({ id: run.id, attempt: 1 }, final(), settlement()), keep: (n) => n > 0, conditional: stale })).toBe(0);
      expect(await settled.value()).toBe(0);
      expect(await t.store.read(run.id, 0)).toEqual([]);
      const last = events(2, 3, 'run_complete');
      expect(await t.store.append(run.id, last, { write: t.store.finishWork({ id: run.id, attempt: 2 }, final(), settlement()), keep: (n) => n > 0, conditional: [last[1]!] })).toBe(1);
      expect(await settled.value()).toBe(1);
      expect(await read(run.id)).toMatchObject({ status: 'completed', output: 'ok', usedCredits: 2, durationMs: 5 });
      expect(await t.store.write((tx, rows) => t.store.finishWork({ id: run.id, attempt: 2 }, final(), settlement())(tx, rows, true))).toBe(0);
      expect(await settled.value()).toBe(1);
      // A settlement that wrote nothing leaves no used credits on the run.
      const other = record();
      await t.store.create(other, null);
      await t.store.claim({ id: other.id, attempt: 0 }, claim);
      await t.store.write((tx, rows) => t.store.finishWork({ id: other.id, attempt: 1 }, final(), { used: 2, apply: async () => false })(tx, rows, true));
      expect(await read(other.id)).toMatchObject({ status: 'completed', usedCredits: null });
    });

    it('follows from any point to run_complete, each event once', async () => {
      const run = record();
      await t.store.create(run, null);
      await t.store.append(run.id, events(1, 4));
      await t.store.append(run.id, events(5, 6, 'run_complete'));
      for (const after of [0, 1, 3, 5]) {
        expect((await collect(t.store.follow(run.id, { after }))).map((e) => e.seq)).toEqual(Array.from({ length: 6 - after }, (_, i) => after + 1 + i));
      }
    });

    it('follows events appended while it reads, concurrent appends included, and ends at run_complete', async () => {
      const run = record();
      await t.store.create(run, null);
      const following = collect(t.store.follow(run.id, { after: 0 }));
      // Twenty writers at once, each its own range of numbers; then the last event.
      await Promise.all(Array.from({ length: 20 }, (_, i) => t.store.append(run.id, events(i * 5 + 1, i * 5 + 5))));
      await t.store.append(run.id, events(101, 101, 'run_complete'));
      const seen = await following;
      expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 101 }, (_, i) => i + 1));
      expect(seen.at(-1)!.type).toBe('run_complete');
    });

    it('stops following when its signal aborts', async () => {
      const run = record();
      await t.store.create(run, null);
      await t.store.append(run.id, events(1, 2));
      const abort = new AbortController();
      const seen: number[] = [];
      const started = Date.now();
      for await (const batch of t.store.follow(run.id, { after: 0, signal: abort.signal })) {
        seen.push(...batch.map((e) => e.seq));
        setTimeout(() => abort.abort(), 50);
      }
      expect(seen).toEqual([1, 2]);
      expect(Date.now() - started).toBeLessThan(2_000);
    });
  });
}
