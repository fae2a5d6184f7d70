import { CreditBalance, CreditLedgerEntry, CreditReservation, CreditService, CreditWriteIncomplete, entityManagerServiceIdentifier, inTransaction, TrellisError } from '@trellis/core';
import { testDatabases } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectBalanceMatchesLedger, member, runRenewal, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

/**
 * The run hot path's credit statements (`CreditService.hold` and `closeOnly` in the caller's
 * transaction: the one-statement grant path where it applies) against the API path (`reserve`,
 * `settle`, `release`: the same two in a transaction of their own, taking the balance's row lock
 * first): two teams go through the same steps, one on each path, and end with the same balances,
 * ledger entries and reservations. And a write that changes no row fails with `CreditWriteIncomplete`.
 */

type Json = Record<string, unknown>;

describe.each(testDatabases())('credit hold and closeOnly on $name', (db) => {
  let t: BillingHost;
  let credits: CreditService;
  let administrator: Awaited<ReturnType<typeof userWith>>;

  beforeAll(async () => {
    t = await startBillingHost(db, 'node');
    credits = t.kernel.get(CreditService);
    administrator = await userWith(t, { isAdministrator: true });
  });
  afterAll(() => t?.close());

  async function buyPack(token: string, teamId: string) {
    const r = await t.request('POST', '/billing/credits/purchase', { token, body: { teamId, packCode: 'credits-1000' } });
    expect(r.status).toBe(200);
    expect((await t.request('POST', `/admin/orders/${r.body.data.order.id}/confirm`, { token: administrator.token })).status).toBe(200);
  }

  /** The two ways to do each step: the API path and the hot path (in a transaction, as a run does). */
  const paths = {
    api: {
      reserve: async (teamId: string, amount: number, reason: string) => (await credits.reserve(t.kernel.fork(), { teamId, amount, reason })).id,
      settle: async (id: string, used: number, reason: string) => void (await credits.settleOnly(t.kernel.fork(), id, used, reason)),
      release: async (id: string, reason: string) => void (await credits.release(t.kernel.fork(), id, reason)),
    },
    hot: {
      reserve: async (teamId: string, amount: number, reason: string) => (await inTransaction(t.kernel.fork(), (tx) => credits.hold(tx, { teamId, amount, reason }))).id,
      settle: (id: string, used: number, reason: string) => inTransaction(t.kernel.fork(), (tx) => credits.closeOnly(tx, id, { used, reason })),
      release: (id: string, reason: string) => inTransaction(t.kernel.fork(), (tx) => credits.closeOnly(tx, id, { used: 0, release: true, reason })),
    },
  };

  /** A team's credits as comparable data (ids and times left out, reservation ids numbered in order, order ids in reasons masked). */
  async function stateOf(teamId: string) {
    const em = t.kernel.fork();
    const balance = await em.findOneOrFail(CreditBalance, { team: teamId });
    const reservations = await em.find(CreditReservation, { team: teamId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const number = new Map(reservations.map((r, i) => [r.id, `#${i + 1}`]));
    const entries = await em.find(CreditLedgerEntry, { team: teamId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return {
      balance: { grant: balance.grantCredits, purchase: balance.purchaseCredits, version: balance.version, periodEnd: balance.periodEnd.getTime() },
      reservations: reservations.map((r) => ({ status: r.status, amount: r.amount, grantPart: r.grantPart, purchasePart: r.purchasePart, grantPeriodEnd: r.grantPeriodEnd.getTime(), usedCredits: r.usedCredits, reason: r.reason, expiresAt: r.expiresAt.getTime(), closed: r.closedAt !== null })),
      ledger: entries.map((e) => ({ kind: e.kind, grantDelta: e.grantDelta, purchaseDelta: e.purchaseDelta, grantAfter: e.grantAfter, purchaseAfter: e.purchaseAfter, reason: e.reason.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>'), reservation: e.reservationId ? number.get(e.reservationId) : null })),
    } satisfies Json;
  }

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: unknown) => (error instanceof TrellisError ? { code: error.code, details: (error as { body?: unknown }).body ?? null } : { error: String(error) }),
    );

  it('gives the same balances, ledger and reservations as reserve, settle and release', async () => {
    const teams = { api: await member(t), hot: await member(t) };
    type Path = keyof typeof paths;
    /** One step on each path, the API's first. */
    const each = async <T>(step: (path: (typeof paths)[Path], team: string, key: Path) => Promise<T>): Promise<Record<Path, T>> => ({
      api: await step(paths.api, teams.api.teamId, 'api'),
      hot: await step(paths.hot, teams.hot.teamId, 'hot'),
    });

    // Grant credits cover it (the hot path's one-statement case): settle part of it.
    const a = await each((p, team) => p.reserve(team, 30, 'run A'));
    await each((p, _team, key) => p.settle(a[key], 18, 'run A done'));
    // Released whole.
    const b = await each((p, team) => p.reserve(team, 50, 'run B'));
    await each((p, _team, key) => p.release(b[key], 'run failed'));
    // A plan month ends while credits are held: its grant part is not given back.
    const e = await each((p, team) => p.reserve(team, 60, 'run E'));
    const sub = (await t.request('GET', '/billing/subscription', { token: teams.api.token })).body.data.subscription;
    t.clock.set(new Date(sub.currentPeriodEnd).getTime() + 1000);
    await runRenewal(t);
    await each((p, _team, key) => p.settle(e[key], 10, 'run E done'));
    // Purchase credits needed (the hot path falls back to reserve): settled across both parts.
    await each((_p, team, key) => buyPack(teams[key].token, team));
    const c = await each((p, team) => p.reserve(team, 150, 'run C'));
    await each((p, _team, key) => p.settle(c[key], 95, 'run C done'));
    // Too few credits: 402 on both, nothing written.
    const tooBig = await each((p, team) => failure(p.reserve(team, 1_000_000, 'too big')));
    expect(tooBig.hot).toEqual(tooBig.api);
    expect(tooBig.api).toMatchObject({ code: 'insufficient_credits' });
    // Closing twice, or more than was reserved: the same refusals, nothing written.
    const closedTwice = await each((p, _team, key) => failure(p.settle(c[key], 1, 'again')));
    expect(closedTwice.hot).toEqual(closedTwice.api);
    expect(closedTwice.api).toMatchObject({ code: 'RESERVATION_CLOSED' });
    const d = await each((p, team) => p.reserve(team, 10, 'run D'));
    const over = await each((p, _team, key) => failure(p.settle(d[key], 11, 'too much')));
    expect(over.hot).toEqual(over.api);
    expect(over.api).not.toBeNull();
    await each((p, _team, key) => p.settle(d[key], 0, 'run D done'));

    const [api, hot] = [await stateOf(teams.api.teamId), await stateOf(teams.hot.teamId)];
    expect(hot).toEqual(api);
    expect(api.ledger.some((entry) => entry.reason.includes('50 plan credits not returned'))).toBe(true);
    expect(api.reservations.every((r) => r.status !== 'held')).toBe(true);
    await expectBalanceMatchesLedger(t, teams.hot.teamId);
  });

  it('fails with CreditWriteIncomplete when a write changes no row, and the transaction leaves nothing behind', async () => {
    const user = await member(t);
    const before = await stateOfBalance(user.teamId);
    const connection = t.kernel.container.get(entityManagerServiceIdentifier).getConnection() as unknown as { execute(sql: string): Promise<unknown> };
    // A trigger that silently skips every ledger insert: the insert changes no row.
    if (db.name === 'sqlite') {
      await connection.execute('create trigger "skip_ledger_inserts" before insert on "billing_credit_ledger" begin select raise(ignore); end');
    } else {
      await connection.execute('create function skip_ledger_insert() returns trigger language plpgsql as $$ begin return null; end $$');
      await connection.execute('create trigger "skip_ledger_inserts" before insert on "billing_credit_ledger" for each row execute function skip_ledger_insert()');
    }
    try {
      await expect(inTransaction(t.kernel.fork(), (tx) => credits.hold(tx, { teamId: user.teamId, amount: 5, reason: 'incomplete' }))).rejects.toBeInstanceOf(CreditWriteIncomplete);
    } finally {
      await connection.execute(db.name === 'sqlite' ? 'drop trigger "skip_ledger_inserts"' : 'drop trigger "skip_ledger_inserts" on "billing_credit_ledger"');
    }
    expect(await stateOfBalance(user.teamId)).toEqual(before);
    expect(await t.kernel.fork().count(CreditReservation, { team: user.teamId })).toBe(0);
  });

  it('fails closeOnly with CreditWriteIncomplete when its ledger entry is not written, and the transaction leaves the reservation held', async () => {
    const user = await member(t);
    const hold = await inTransaction(t.kernel.fork(), (tx) => credits.hold(tx, { teamId: user.teamId, amount: 5, reason: 'to close' }));
    const before = await stateOfBalance(user.teamId);
    const connection = t.kernel.container.get(entityManagerServiceIdentifier).getConnection() as unknown as { execute(sql: string): Promise<unknown> };
    if (db.name === 'sqlite') {
      await connection.execute('create trigger "skip_ledger_inserts_2" before insert on "billing_credit_ledger" begin select raise(ignore); end');
    } else {
      await connection.execute('create or replace function skip_ledger_insert() returns trigger language plpgsql as $$ begin return null; end $$');
      await connection.execute('create trigger "skip_ledger_inserts_2" before insert on "billing_credit_ledger" for each row execute function skip_ledger_insert()');
    }
    try {
      await expect(inTransaction(t.kernel.fork(), (tx) => credits.closeOnly(tx, hold.id, { used: 2, reason: 'incomplete' }))).rejects.toBeInstanceOf(CreditWriteIncomplete);
    } finally {
      await connection.execute(db.name === 'sqlite' ? 'drop trigger "skip_ledger_inserts_2"' : 'drop trigger "skip_ledger_inserts_2" on "billing_credit_ledger"');
    }
    expect(await stateOfBalance(user.teamId)).toEqual(before);
    expect((await t.kernel.fork().findOneOrFail(CreditReservation, { id: hold.id })).status).toBe('held');
    await inTransaction(t.kernel.fork(), (tx) => credits.closeOnly(tx, hold.id, { used: 2, reason: 'done' }));
    await expectBalanceMatchesLedger(t, user.teamId);
  });

  async function stateOfBalance(teamId: string) {
    // The balance exists after the first reservation attempt: make sure it does, then read it.
    await credits.balance(t.kernel.fork(), teamId);
    const balance = await t.kernel.fork().findOneOrFail(CreditBalance, { team: teamId });
    return { grant: balance.grantCredits, purchase: balance.purchaseCredits, version: balance.version };
  }
});
