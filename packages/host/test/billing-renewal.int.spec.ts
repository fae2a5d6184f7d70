import { CreditLedgerEntry, PaymentOrder, type TrellisHooks } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectBalanceMatchesLedger, member, runRenewal, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

const DAY = 86_400_000;

// The renewal job under a clock the test moves: periods end, scheduled plans apply, cancelled and
// unpaid subscriptions fall back to free, credit months grant and expire, and a period is renewed
// once however many times (and however concurrently) the job runs.
describe.each(testDatabases())('billing renewal on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    let administrator: Awaited<ReturnType<typeof userWith>>;
    const changes: Array<TrellisHooks['billing.plan_changed']> = [];

    beforeAll(async () => {
      t = await startBillingHost(db, transport);
      administrator = await userWith(t, { isAdministrator: true });
      t.kernel.hooks.on('billing.plan_changed', (change) => void changes.push(change));
    });
    afterAll(() => t?.close());

    const overview = async (token: string) => (await t.request('GET', '/billing/subscription', { token })).body.data;
    const atEndOf = (sub: { currentPeriodEnd: string }, plusMs = 1000) => t.clock.set(Date.parse(sub.currentPeriodEnd) + plusMs);
    const grants = (teamId: string) => t.kernel.fork().count(CreditLedgerEntry, { team: teamId, kind: 'grant' });

    async function subscribe(user: { token: string; teamId: string }, plan: string, period: 'monthly' | 'yearly') {
      const r = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: plan, billingPeriod: period } });
      expect(r.body.data.action).toBe('payment_required');
      const paid = await t.request('POST', `/admin/orders/${r.body.data.order.id}/confirm`, { token: administrator.token });
      expect(paid.status).toBe(200);
      return (await overview(user.token)).subscription;
    }

    it('renews a free period: left-over plan credits expire, new ones are granted, purchased credits stay', async () => {
      const user = await member(t);
      const pack = await t.request('POST', '/billing/credits/purchase', { token: user.token, body: { teamId: user.teamId, packCode: 'credits-1000' } });
      await t.request('POST', `/admin/orders/${pack.body.data.order.id}/confirm`, { token: administrator.token });
      await t.request('POST', '/billing/credits/reservations', { token: user.token, body: { teamId: user.teamId, amount: 130 } }).then(async (r) => {
        await t.request('POST', `/billing/credits/reservations/${r.body.data.id}/settle`, { token: user.token, body: { usedCredits: 130 } });
      });
      const before = await overview(user.token);
      expect(before.balance).toMatchObject({ grantCredits: 0, purchaseCredits: 970 });
      atEndOf(before.subscription);
      await runRenewal(t);
      const after = await overview(user.token);
      expect(after.subscription).toMatchObject({ planCode: 'free', status: 'active', currentPeriodStart: before.subscription.currentPeriodEnd });
      expect(Date.parse(after.subscription.currentPeriodEnd)).toBeGreaterThan(t.clock.nowMs());
      expect(after.balance).toMatchObject({ grantCredits: 100, purchaseCredits: 970, periodGrantedCredits: 100, periodStart: before.subscription.currentPeriodEnd });
      expect(await t.kernel.fork().count(PaymentOrder, { team: user.teamId, kind: 'renewal' })).toBe(0);
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('keeps the day of month across short months (anchored periods)', async () => {
      t.clock.set(Date.parse('2027-01-31T08:00:00.000Z'));
      const user = await member(t);
      const ends: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { subscription } = await overview(user.token);
        ends.push(subscription.currentPeriodEnd);
        atEndOf(subscription);
        await runRenewal(t);
      }
      expect(ends).toEqual(['2027-02-28T08:00:00.000Z', '2027-03-31T08:00:00.000Z', '2027-04-30T08:00:00.000Z']);
    });

    it('renews a period once, however often and however concurrently the job runs', async () => {
      const user = await member(t);
      const { subscription } = await overview(user.token);
      atEndOf(subscription);
      await Promise.all(Array.from({ length: 6 }, () => runRenewal(t)));
      await runRenewal(t);
      expect(await grants(user.teamId)).toBe(2);
      const after = await overview(user.token);
      expect(after.balance.grantCredits).toBe(100);
      expect(after.subscription.currentPeriodStart).toBe(subscription.currentPeriodEnd);
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('skips missed periods rather than granting them', async () => {
      const user = await member(t);
      const { subscription } = await overview(user.token);
      atEndOf(subscription, 95 * DAY);
      await runRenewal(t);
      await runRenewal(t);
      expect(await grants(user.teamId)).toBe(2);
      const after = await overview(user.token);
      expect(Date.parse(after.subscription.currentPeriodStart)).toBeLessThanOrEqual(t.clock.nowMs());
      expect(Date.parse(after.subscription.currentPeriodEnd)).toBeGreaterThan(t.clock.nowMs());
    });

    it('renews a paid plan as past_due with a renewal order; paying it makes it active', async () => {
      const user = await member(t);
      const pro = await subscribe(user, 'pro', 'monthly');
      atEndOf(pro);
      await runRenewal(t);
      const renewed = await overview(user.token);
      expect(renewed.subscription).toMatchObject({ planCode: 'pro', status: 'past_due', currentPeriodStart: pro.currentPeriodEnd });
      expect(renewed.balance).toMatchObject({ grantCredits: 2000, periodGrantedCredits: 2000 });
      const orders = await t.request('GET', '/billing/orders', { token: user.token });
      const renewal = orders.body.data.items.find((o: { kind: string }) => o.kind === 'renewal');
      expect(renewal).toMatchObject({ status: 'pending', planCode: 'pro', billingPeriod: 'monthly', amount: 2000, periodStart: pro.currentPeriodEnd, provider: 'manual' });
      expect(renewal.instructions).toContain(renewal.id);
      const paid = await t.request('POST', `/admin/orders/${renewal.id}/confirm`, { token: administrator.token });
      expect(paid.status).toBe(200);
      const active = await overview(user.token);
      expect(active.subscription).toMatchObject({ planCode: 'pro', status: 'active', currentPeriodStart: pro.currentPeriodEnd });
      expect(active.balance.grantCredits).toBe(2000);
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('falls back to free when a renewal stays unpaid past the grace period', async () => {
      const user = await member(t);
      const pro = await subscribe(user, 'pro', 'monthly');
      atEndOf(pro);
      await runRenewal(t);
      t.clock.advance(6 * DAY);
      await runRenewal(t);
      expect((await overview(user.token)).subscription.status).toBe('past_due');
      t.clock.advance(1 * DAY);
      await runRenewal(t);
      const after = await overview(user.token);
      expect(after.subscription).toMatchObject({ planCode: 'free', status: 'active', billingPeriod: 'monthly' });
      expect(after.balance).toMatchObject({ grantCredits: 100 });
      const renewal = (await t.request('GET', '/billing/orders', { token: user.token })).body.data.items.find((o: { kind: string }) => o.kind === 'renewal');
      expect(renewal.status).toBe('canceled');
      expect(changes).toContainEqual({ teamId: user.teamId, from: { planCode: 'pro', billingPeriod: 'monthly' }, to: { planCode: 'free', billingPeriod: 'monthly' }, reason: 'renewal_unpaid' });
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('applies a scheduled downgrade at the end of the period', async () => {
      const user = await member(t);
      const team = await subscribe(user, 'team', 'monthly');
      const down = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'free', billingPeriod: 'monthly' } });
      expect(down.body.data).toMatchObject({ action: 'downgrade_scheduled', effectiveAt: team.currentPeriodEnd });
      t.clock.set(Date.parse(team.currentPeriodEnd) - 1000);
      await runRenewal(t);
      expect((await overview(user.token)).subscription.planCode).toBe('team');
      atEndOf(team);
      await runRenewal(t);
      const after = await overview(user.token);
      expect(after.subscription).toMatchObject({ planCode: 'free', status: 'active', scheduledPlanCode: null, currentPeriodStart: team.currentPeriodEnd });
      expect(after.balance).toMatchObject({ grantCredits: 100 });
      expect(changes).toContainEqual({ teamId: user.teamId, from: { planCode: 'team', billingPeriod: 'monthly' }, to: { planCode: 'free', billingPeriod: 'monthly' }, reason: 'scheduled_change' });
    });

    it('ends a subscription whose renewal was cancelled: the team falls back to free', async () => {
      const user = await member(t);
      const pro = await subscribe(user, 'pro', 'yearly');
      await t.request('POST', '/billing/subscription/cancel-renewal', { token: user.token, body: { teamId: user.teamId } });
      atEndOf(pro);
      await runRenewal(t);
      const after = await overview(user.token);
      expect(after.subscription).toMatchObject({ planCode: 'free', billingPeriod: 'monthly', status: 'active', cancelAtPeriodEnd: false, canceledAt: null });
      expect(after.balance).toMatchObject({ grantCredits: 100, periodGrantedCredits: 100 });
      expect(await t.kernel.fork().count(PaymentOrder, { team: user.teamId, kind: 'renewal' })).toBe(0);
      expect(changes).toContainEqual({ teamId: user.teamId, from: { planCode: 'pro', billingPeriod: 'yearly' }, to: { planCode: 'free', billingPeriod: 'monthly' }, reason: 'renewal_canceled' });
    });

    it('grants a yearly plan its credits month by month, expiring what is left', async () => {
      const user = await member(t);
      const yearly = await subscribe(user, 'pro', 'yearly');
      await t.request('POST', '/billing/credits/reservations', { token: user.token, body: { teamId: user.teamId, amount: 500 } }).then((r) =>
        t.request('POST', `/billing/credits/reservations/${r.body.data.id}/settle`, { token: user.token, body: { usedCredits: 500 } }),
      );
      const first = await overview(user.token);
      expect(first.balance.grantCredits).toBe(1500);
      t.clock.set(Date.parse(first.balance.periodEnd) + 1000);
      await runRenewal(t);
      await runRenewal(t);
      const second = await overview(user.token);
      expect(second.subscription).toMatchObject({ planCode: 'pro', billingPeriod: 'yearly', currentPeriodStart: yearly.currentPeriodStart, status: 'active' });
      expect(second.balance).toMatchObject({ grantCredits: 2000, periodStart: first.balance.periodEnd, periodGrantedCredits: 2000 });
      const ledger = (await t.request('GET', '/billing/credits/ledger', { token: user.token })).body.data.items;
      expect(ledger.slice(0, 2).map((e: { kind: string; delta: number }) => [e.kind, e.delta])).toEqual([
        ['grant', 2000],
        ['expiry', -1500],
      ]);
      expect(await grants(user.teamId)).toBe(3); // free at sign-up, pro when paid, pro month two
      await expectBalanceMatchesLedger(t, user.teamId);
    });
  });
});
