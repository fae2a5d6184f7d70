import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreditBalance, CreditLedgerEntry, CreditReservation, CreditService, Run } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, type Actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse } from './support/run-clients.js';

/**
 * A run's credits on every path its store can take: on PostgreSQL the run's record with its hold,
 * and its final record with the settlement, are each one statement (PgRunStore) when the team's
 * grant credits cover the hold and the reservation is still held whole at the end, and units of a
 * group commit when many arrive at once; otherwise the store's transactions write them (the grant credits short: purchased credits; the reservation
 * released before the run ended). Every path ends with the same rows: the run's used credits, the
 * reservation, the balance and a ledger that adds up to it, each entry's reason as the docs say.
 */

type Json = Record<string, any>;

describe.each(testDatabases())('run credits on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  let teamId: string;

  beforeAll(async () => {
    t = await startTestHost(db, 'node');
    owner = await actor(t);
    const teams = await t.request('GET', '/teams', { token: owner.token });
    teamId = teams.body.items[0].id;
    // The team's billing records are made at its first run.
    await run(wf.doc(wf.output('o', 'first')));
  });
  afterAll(() => t?.close());

  const runUrl = (documentId: string) => `${t.url}/documents/${documentId}/run`;
  const balanceOf = async () => {
    const balance = await t.kernel.fork().findOneOrFail(CreditBalance, { team: teamId });
    return { grant: balance.grantCredits, purchase: balance.purchaseCredits };
  };
  /** Ledger entries of the team when its balance was last set (see `expectLedgerAddsUp`). */
  let entriesBefore = new Set<string>();
  let balanceBefore = { grant: 0, purchase: 0 };
  async function setBalance(grant: number, purchase: number) {
    await t.kernel.fork().nativeUpdate(CreditBalance, { team: teamId }, { grantCredits: grant, purchaseCredits: purchase });
    entriesBefore = new Set((await t.kernel.fork().find(CreditLedgerEntry, { team: teamId })).map((e) => e.id));
    balanceBefore = { grant, purchase };
  }
  /** The ledger entries made since the balance was set add up to its change; none leaves it below 0. */
  async function expectLedgerAddsUp() {
    const entries = (await t.kernel.fork().find(CreditLedgerEntry, { team: teamId })).filter((e) => !entriesBefore.has(e.id));
    const sum = (key: 'grantDelta' | 'purchaseDelta') => entries.reduce((total, e) => total + e[key], 0);
    expect(await balanceOf()).toEqual({ grant: balanceBefore.grant + sum('grantDelta'), purchase: balanceBefore.purchase + sum('purchaseDelta') });
    for (const entry of entries) expect(entry.grantAfter >= 0 && entry.purchaseAfter >= 0).toBe(true);
  }
  /** The run's record, its reservation and the ledger entries of that reservation. */
  async function stored(runId: string) {
    const em = t.kernel.fork();
    const run = await em.findOneOrFail(Run, { id: runId });
    const reservation = await em.findOneOrFail(CreditReservation, { id: run.reservationId! });
    const entries = await em.find(CreditLedgerEntry, { reservationId: run.reservationId! }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return {
      run: { status: run.status, reservedCredits: run.reservedCredits, usedCredits: run.usedCredits },
      reservation: { status: reservation.status, amount: reservation.amount, grantPart: reservation.grantPart, purchasePart: reservation.purchasePart, usedCredits: reservation.usedCredits, reason: reservation.reason },
      ledger: entries.map((e) => ({ kind: e.kind, grantDelta: e.grantDelta, purchaseDelta: e.purchaseDelta, grantAfter: e.grantAfter, purchaseAfter: e.purchaseAfter, reason: e.reason })),
    } satisfies Json;
  }
  async function run(content: unknown): Promise<string> {
    const { documentId } = await workflowDocument(t, owner.token, content);
    const { events } = await readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson' } });
    expect(events.at(-1)!.type).toBe('run_complete');
    return events[0]!.data.runId as string;
  }

  it('a run the grant credits cover: reserved and settled, each a ledger entry', async () => {
    await setBalance(10, 0);
    const runId = await run(wf.doc(wf.code('c', 'return 21 * 2;'), wf.output('o', '{{ c }}')));
    expect(await stored(runId)).toEqual({
      run: { status: 'completed', reservedCredits: 1, usedCredits: 1 },
      reservation: { status: 'settled', amount: 1, grantPart: 1, purchasePart: 0, usedCredits: 1, reason: `run ${runId}` },
      ledger: [
        { kind: 'reservation', grantDelta: -1, purchaseDelta: 0, grantAfter: 9, purchaseAfter: 0, reason: `Reserved for run ${runId}` },
        { kind: 'settlement', grantDelta: 0, purchaseDelta: 0, grantAfter: 9, purchaseAfter: 0, reason: `Settled 1 of 1 reserved for run ${runId}: run ${runId}` },
      ],
    });
    expect(await balanceOf()).toEqual({ grant: 9, purchase: 0 });
    await expectLedgerAddsUp();
  });

  it('runs of the team at once (on PostgreSQL their balance writes share group commits): each reserved and settled, the ledger adds up', async () => {
    // Grant credits for 20 runs, purchased ones for the rest: the holds past the 20th take purchased credits inside a group.
    await setBalance(20, 10);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.code('c', 'return 21 * 2;'), wf.output('o', '{{ c }}')));
    const runs = await Promise.all(Array.from({ length: 24 }, () => readNdjson(runUrl(documentId), { token: owner.token, body: { format: 'ndjson' } })));
    const runIds = runs.map(({ events }) => {
      expect(events.at(-1)!.type).toBe('run_complete');
      return events[0]!.data.runId as string;
    });
    for (const runId of runIds) {
      const { run: record, reservation } = await stored(runId);
      expect(record).toEqual({ status: 'completed', reservedCredits: 1, usedCredits: 1 });
      expect(reservation).toMatchObject({ status: 'settled', amount: 1, usedCredits: 1 });
    }
    expect(await balanceOf()).toEqual({ grant: 0, purchase: 6 });
    await expectLedgerAddsUp();
  });

  it('a failed run the grant credits cover: its credits released', async () => {
    await setBalance(10, 0);
    const runId = await run(wf.doc(wf.code('c', 'throw new Error("no");'), wf.output('o', '{{ c }}')));
    expect(await stored(runId)).toEqual({
      run: { status: 'failed', reservedCredits: 1, usedCredits: 0 },
      reservation: { status: 'released', amount: 1, grantPart: 1, purchasePart: 0, usedCredits: 0, reason: `run ${runId}` },
      ledger: [
        { kind: 'reservation', grantDelta: -1, purchaseDelta: 0, grantAfter: 9, purchaseAfter: 0, reason: `Reserved for run ${runId}` },
        { kind: 'release', grantDelta: 1, purchaseDelta: 0, grantAfter: 10, purchaseAfter: 0, reason: `Released 1 reserved for run ${runId}: run failed` },
      ],
    });
    expect(await balanceOf()).toEqual({ grant: 10, purchase: 0 });
    await expectLedgerAddsUp();
  });

  it('grant credits short: the hold takes purchased credits, and a failed run gives them back', async () => {
    await setBalance(0, 5);
    const ok = await run(wf.doc(wf.output('o', 'fine')));
    expect(await stored(ok)).toMatchObject({
      run: { status: 'completed', reservedCredits: 1, usedCredits: 1 },
      reservation: { status: 'settled', grantPart: 0, purchasePart: 1, usedCredits: 1 },
    });
    expect(await balanceOf()).toEqual({ grant: 0, purchase: 4 });
    const failed = await run(wf.doc(wf.code('c', 'throw new Error("no");')));
    expect(await stored(failed)).toMatchObject({
      run: { status: 'failed', reservedCredits: 1, usedCredits: 0 },
      reservation: { status: 'released', grantPart: 0, purchasePart: 1, usedCredits: 0 },
      ledger: [{ kind: 'reservation', grantDelta: 0, purchaseDelta: -1 }, { kind: 'release', grantDelta: 0, purchaseDelta: 1, purchaseAfter: 4 }],
    });
    expect(await balanceOf()).toEqual({ grant: 0, purchase: 4 });
    await expectLedgerAddsUp();
  });

  it('no credits at all: 402, and neither a run nor a reservation is stored', async () => {
    await setBalance(0, 0);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.output('o', 'x')));
    const runsBefore = await t.kernel.fork().count(Run, { documentId });
    const reservationsBefore = await t.kernel.fork().count(CreditReservation, { team: teamId });
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: {} });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ error: 'insufficient_credits' });
    expect(await t.kernel.fork().count(Run, { documentId })).toBe(runsBefore);
    expect(await t.kernel.fork().count(CreditReservation, { team: teamId })).toBe(reservationsBefore);
    await expectLedgerAddsUp();
  });

  it('a reservation released while its run waited: the run ends with no used credits, nothing given back twice', async () => {
    await setBalance(10, 0);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.ask('colour', 'Which colour?'), wf.output('o', '{{ colour }}')));
    const paused = await readSse(runUrl(documentId), { token: owner.token, body: {} });
    const waiting = paused.events.at(-1)!;
    expect(waiting.type).toBe('run_waiting');
    const runId = waiting.data.runId as string;
    const { reservationId } = await t.kernel.fork().findOneOrFail(Run, { id: runId });
    // What the expiry job does to a reservation left open past its time.
    await t.kernel.get(CreditService).release(t.kernel.fork(), reservationId!, 'expired');
    expect(await balanceOf()).toEqual({ grant: 10, purchase: 0 });
    const resumed = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'green' } });
    expect(resumed.status).toBe(202);
    const rest = await readSse(`${t.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token, lastEventId: waiting.seq });
    expect(rest.events.at(-1)!.type).toBe('run_complete');
    expect(await stored(runId)).toEqual({
      run: { status: 'completed', reservedCredits: 1, usedCredits: null },
      reservation: { status: 'released', amount: 1, grantPart: 1, purchasePart: 0, usedCredits: 0, reason: `run ${runId}` },
      ledger: [
        { kind: 'reservation', grantDelta: -1, purchaseDelta: 0, grantAfter: 9, purchaseAfter: 0, reason: `Reserved for run ${runId}` },
        { kind: 'release', grantDelta: 1, purchaseDelta: 0, grantAfter: 10, purchaseAfter: 0, reason: `Released 1 reserved for run ${runId}: expired` },
      ],
    });
    expect(await balanceOf()).toEqual({ grant: 10, purchase: 0 });
    await expectLedgerAddsUp();
  });
});
