import { CreditLedgerEntry, Subscription } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectBalanceMatchesLedger, member, runExpiry, runRenewal, sharedTeam, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

// Credits for runs: reservations over HTTP, the 402 body, and parallel requests that must never
// overspend, on both databases (SQLite's single writer, PostgreSQL's pool of 10 connections).
describe.each(testDatabases())('billing credits on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    let administrator: Awaited<ReturnType<typeof userWith>>;

    beforeAll(async () => {
      t = await startBillingHost(db, transport);
      administrator = await userWith(t, { isAdministrator: true });
    });
    afterAll(() => t?.close());

    const reserve = (token: string, body: Record<string, unknown>) => t.request('POST', '/billing/credits/reservations', { token, body });
    const balanceOf = async (token: string, teamId: string) => (await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token })).body.data.balance;

    async function buyPack(token: string, teamId: string) {
      const r = await t.request('POST', '/billing/credits/purchase', { token, body: { teamId, packCode: 'credits-1000' } });
      expect(r.status).toBe(200);
      const confirmed = await t.request('POST', `/admin/orders/${r.body.data.order.id}/confirm`, { token: administrator.token });
      expect(confirmed.status).toBe(200);
    }

    it('reserves, settles what was used and gives the rest back, each step in the ledger', async () => {
      const user = await member(t);
      const r = await reserve(user.token, { teamId: user.teamId, amount: 30, reason: 'run A' });
      expect(r.status).toBe(201);
      expect(r.body.success).toBe(true);
      expect(r.body.data).toMatchObject({ teamId: user.teamId, status: 'held', amount: 30, usedCredits: null, reason: 'run A' });
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ totalCredits: 70, reservedCredits: 30 });

      const settled = await t.request('POST', `/billing/credits/reservations/${r.body.data.id}/settle`, { token: user.token, body: { usedCredits: 18 } });
      expect(settled.status).toBe(200);
      expect(settled.body.data).toMatchObject({ status: 'settled', usedCredits: 18 });
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ totalCredits: 82, reservedCredits: 0 });

      const twice = await t.request('POST', `/billing/credits/reservations/${r.body.data.id}/settle`, { token: user.token, body: { usedCredits: 1 } });
      expect(twice.status).toBe(409);
      expect(twice.body).toMatchObject({ success: false, error: 'RESERVATION_CLOSED' });

      const other = await reserve(user.token, { teamId: user.teamId, amount: 50 });
      const released = await t.request('POST', `/billing/credits/reservations/${other.body.data.id}/release`, { token: user.token });
      expect(released.status).toBe(200);
      expect(released.body.data).toMatchObject({ status: 'released', usedCredits: 0 });
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ totalCredits: 82 });

      const ledger = await t.request('GET', '/billing/credits/ledger', { token: user.token });
      expect(ledger.body.data.items.map((e: { kind: string; delta: number; totalAfter: number }) => [e.kind, e.delta, e.totalAfter])).toEqual([
        ['release', 50, 82],
        ['reservation', -50, 32],
        ['settlement', 12, 82],
        ['reservation', -30, 70],
        ['grant', 100, 100],
      ]);
      for (const entry of ledger.body.data.items) expect(entry.reason).toMatch(/\w/);
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('answers 402 insufficient_credits with the balance and the shortfall', async () => {
      const user = await member(t);
      const r = await reserve(user.token, { teamId: user.teamId, amount: 150 });
      expect(r.status).toBe(402);
      expect(r.body).toEqual({ success: false, error: 'insufficient_credits', message: expect.any(String), balance: 100, required: 150, shortfall: 50 });
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ totalCredits: 100 });
    });

    it('refuses bad reservations: validation, settling more than reserved, strangers', async () => {
      const user = await member(t);
      for (const body of [{ teamId: user.teamId }, { teamId: user.teamId, amount: 0 }, { teamId: user.teamId, amount: 1.5 }, { teamId: user.teamId, amount: 'x' }]) {
        const r = await reserve(user.token, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error).toBe('BAD_REQUEST');
      }
      const hold = await reserve(user.token, { teamId: user.teamId, amount: 10 });
      const over = await t.request('POST', `/billing/credits/reservations/${hold.body.data.id}/settle`, { token: user.token, body: { usedCredits: 11 } });
      expect(over.status).toBe(400);
      expect(over.body.error).toBe('SETTLE_EXCEEDS_RESERVATION');

      const stranger = await member(t);
      expect((await reserve(stranger.token, { teamId: user.teamId, amount: 1 })).body.error).toBe('NO_TEAM');
      const foreign = await t.request('POST', `/billing/credits/reservations/${hold.body.data.id}/release`, { token: stranger.token });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error).toBe('RESERVATION_NOT_FOUND');
      const missing = await t.request('POST', '/billing/credits/reservations/nope/release', { token: user.token });
      expect(missing.status).toBe(404);
    });

    it('lets any member reserve, also with an API key (for embedding)', async () => {
      const { teamId, plain } = await sharedTeam(t);
      const key = await t.request('POST', '/auth/api-keys', { token: plain.token, body: { name: 'worker' } });
      const r = await reserve(key.body.token, { teamId, amount: 5, reason: 'embedded worker' });
      expect(r.status).toBe(201);
    });

    it('never overspends under parallel reservations', async () => {
      const user = await member(t);
      await buyPack(user.token, user.teamId); // 100 plan credits + 1000 purchased
      const attempts = 60;
      const results = await Promise.all(Array.from({ length: attempts }, (_, i) => reserve(user.token, { teamId: user.teamId, amount: 25, reason: `parallel ${i}` })));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s !== 201 && s !== 402)).toEqual([]);
      const won = statuses.filter((s) => s === 201).length;
      expect(won).toBe(Math.floor(1100 / 25)); // 44
      for (const r of results.filter((x) => x.status === 402)) expect(r.body.shortfall).toBe(25 - r.body.balance);
      const balance = await balanceOf(user.token, user.teamId);
      expect(balance).toMatchObject({ totalCredits: 0, grantCredits: 0, purchaseCredits: 0, reservedCredits: 1100 });
      await expectBalanceMatchesLedger(t, user.teamId);

      // Settling and releasing in parallel too: each reservation closes once.
      const held = results.filter((r) => r.status === 201).map((r) => r.body.data.id as string);
      const closes = await Promise.all(
        held.flatMap((id, i) => [
          t.request('POST', `/billing/credits/reservations/${id}/${i % 2 ? 'release' : 'settle'}`, { token: user.token, body: i % 2 ? {} : { usedCredits: 5 } }),
          t.request('POST', `/billing/credits/reservations/${id}/release`, { token: user.token }),
        ]),
      );
      expect(closes.filter((r) => r.status === 200)).toHaveLength(held.length);
      expect(closes.filter((r) => r.status === 409)).toHaveLength(held.length);
      const { balance: stored } = await expectBalanceMatchesLedger(t, user.teamId);
      const used = (await t.kernel.fork().find(CreditLedgerEntry, { team: user.teamId, kind: 'settlement' })).length;
      expect(stored.grantCredits + stored.purchaseCredits).toBe(1100 - 5 * used);
    });

    it('creates a team’s billing records once under parallel first reads', async () => {
      const owner = await t.register();
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Fresh' } });
      const reads = await Promise.all(Array.from({ length: 12 }, () => t.request('GET', `/billing/subscription?teamId=${team.body.id}`, { token: owner.token })));
      expect(reads.map((r) => r.status)).toEqual(Array(12).fill(200));
      expect(new Set(reads.map((r) => r.body.data.subscription.id)).size).toBe(1);
      expect(await t.kernel.fork().count(Subscription, { team: team.body.id })).toBe(1);
      expect(await t.kernel.fork().count(CreditLedgerEntry, { team: team.body.id, kind: 'grant' })).toBe(1);
      await expectBalanceMatchesLedger(t, team.body.id);
    });

    it('releases reservations left open past their time', async () => {
      const user = await member(t);
      const hold = await reserve(user.token, { teamId: user.teamId, amount: 40, ttlSeconds: 60 });
      const keep = await reserve(user.token, { teamId: user.teamId, amount: 10, ttlSeconds: 3600 });
      t.clock.advance(61_000);
      expect((await runExpiry(t)).reservations).toBeGreaterThanOrEqual(1);
      expect((await runExpiry(t)).reservations).toBe(0);
      const list = await t.request('GET', '/billing/credits/ledger', { token: user.token });
      expect(list.body.data.items[0]).toMatchObject({ kind: 'release', delta: 40, reservationId: hold.body.data.id });
      expect(list.body.data.items[0].reason).toContain('expiry job');
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ totalCredits: 90, reservedCredits: 10 });
      const late = await t.request('POST', `/billing/credits/reservations/${hold.body.data.id}/settle`, { token: user.token, body: { usedCredits: 1 } });
      expect(late.status).toBe(409);
      expect((await t.request('POST', `/billing/credits/reservations/${keep.body.data.id}/settle`, { token: user.token, body: { usedCredits: 10 } })).status).toBe(200);
    });

    it('does not give back plan credits of a month that ended while they were reserved', async () => {
      const user = await member(t);
      await buyPack(user.token, user.teamId);
      const hold = await reserve(user.token, { teamId: user.teamId, amount: 150 }); // 100 plan + 50 purchased
      const sub = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription;
      t.clock.set(new Date(sub.currentPeriodEnd).getTime() + 1000);
      await runRenewal(t);
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ grantCredits: 100, purchaseCredits: 950 });
      const settled = await t.request('POST', `/billing/credits/reservations/${hold.body.data.id}/settle`, { token: user.token, body: { usedCredits: 20 } });
      expect(settled.status).toBe(200);
      // Used 20 of the plan part; the other 80 plan credits expired with their month; the 50 purchased come back.
      expect(await balanceOf(user.token, user.teamId)).toMatchObject({ grantCredits: 100, purchaseCredits: 1000 });
      const entry = (await t.request('GET', '/billing/credits/ledger', { token: user.token })).body.data.items[0];
      expect(entry).toMatchObject({ kind: 'settlement', grantDelta: 0, purchaseDelta: 50 });
      expect(entry.reason).toContain('80 plan credits not returned');
      await expectBalanceMatchesLedger(t, user.teamId);
    });
  });
});
