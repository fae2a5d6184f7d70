import { AbstractPaymentProvider, paymentProviderServiceIdentifier, provide, type Checkout, type PaymentEvent } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectBalanceMatchesLedger, leaveAllTeams, member, sharedTeam, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

// The rows of the spec's Billing tables (endpoints, state table, authentication rules 1-2 and the
// Errors row), over real sockets, on both transports and both databases.
describe.each(testDatabases())('billing endpoints on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    let administrator: Awaited<ReturnType<typeof userWith>>;

    beforeAll(async () => {
      t = await startBillingHost(db, transport);
      administrator = await userWith(t, { isAdministrator: true });
    });
    afterAll(() => t?.close());

    const confirm = (orderId: string) => t.request('POST', `/admin/orders/${orderId}/confirm`, { token: administrator.token });

    describe('GET /billing/subscription', () => {
      it("answers the caller's first team with a free subscription and its first monthly credits", async () => {
        const user = await member(t);
        const r = await t.request('GET', '/billing/subscription', { token: user.token });
        expect(r.status).toBe(200);
        expect(r.body.success).toBe(true);
        const { subscription, balance } = r.body.data;
        expect(subscription).toMatchObject({
          teamId: user.teamId,
          planCode: 'free',
          billingPeriod: 'monthly',
          status: 'active',
          monthlyCredits: 100,
          currentPeriodStart: '2026-01-31T12:00:00.000Z',
          currentPeriodEnd: '2026-02-28T12:00:00.000Z',
          cancelAtPeriodEnd: false,
          canceledAt: null,
          scheduledPlanCode: null,
        });
        expect(subscription.id).toMatch(/^[0-9a-f-]{36}$/);
        expect(balance).toMatchObject({
          totalCredits: 100,
          grantCredits: 100,
          purchaseCredits: 0,
          reservedCredits: 0,
          periodEnd: '2026-02-28T12:00:00.000Z',
          periodGrantedCredits: 100,
        });
        // The same team named explicitly gives the same records (created once).
        const named = await t.request('GET', `/billing/subscription?teamId=${user.teamId}`, { token: user.token });
        expect(named.body.data.subscription.id).toBe(subscription.id);
        await expectBalanceMatchesLedger(t, user.teamId);
      });

      it('needs team membership: any member may read, others get 400 NO_TEAM', async () => {
        const { teamId, plain } = await sharedTeam(t);
        const asMember = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: plain.token });
        expect(asMember.status).toBe(200);
        expect(asMember.body.data.subscription.teamId).toBe(teamId);
        const outsider = await t.register();
        const r = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: outsider.token });
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ success: false, error: 'NO_TEAM', message: expect.any(String) });
        const malformed = await t.request('GET', '/billing/subscription?teamId=not-a-team', { token: outsider.token });
        expect(malformed.status).toBe(400);
        expect(malformed.body.error).toBe('NO_TEAM');
      });

      it('answers 400 NO_TEAM to a caller who is in no team', async () => {
        const user = await t.register();
        await leaveAllTeams(t, user.userId);
        const r = await t.request('GET', '/billing/subscription', { token: user.token });
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ success: false, error: 'NO_TEAM' });
      });

      it('takes a JWT only (authentication rules 1 and 2)', async () => {
        const user = await member(t);
        const none = await t.request('GET', '/billing/subscription');
        expect(none.status).toBe(401);
        expect(none.body).toMatchObject({ success: false, error: 'missing_credentials' });
        const key = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'k' } });
        const withKey = await t.request('GET', '/billing/subscription', { token: key.body.token });
        expect(withKey.status).toBe(403);
        expect(withKey.body).toMatchObject({ success: false, error: 'credential_not_allowed' });
      });
    });

    describe('POST /billing/subscription/change-plan', () => {
      it('answers 400 BAD_REQUEST when teamId, targetPlanCode or billingPeriod is missing', async () => {
        const user = await member(t);
        const full = { teamId: user.teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' };
        for (const missing of ['teamId', 'targetPlanCode', 'billingPeriod'] as const) {
          const body: Record<string, string> = { ...full };
          delete body[missing];
          const r = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body });
          expect(r.status, missing).toBe(400);
          expect(r.body).toEqual({ success: false, error: 'BAD_REQUEST', message: expect.stringContaining(missing) });
        }
        const empty = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { ...full, targetPlanCode: '' } });
        expect(empty.body.error).toBe('BAD_REQUEST');
      });

      it('answers 400 NO_TEAM outside the team and 403 FORBIDDEN to a plain member', async () => {
        const { teamId, plain } = await sharedTeam(t);
        const outsider = await t.register();
        const body = { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' };
        const r1 = await t.request('POST', '/billing/subscription/change-plan', { token: outsider.token, body });
        expect(r1.status).toBe(400);
        expect(r1.body.error).toBe('NO_TEAM');
        const r2 = await t.request('POST', '/billing/subscription/change-plan', { token: plain.token, body });
        expect(r2.status).toBe(403);
        expect(r2.body).toEqual({ success: false, error: 'FORBIDDEN', message: expect.any(String) });
      });

      it('answers 400 INVALID_PLAN and INVALID_BILLING_PERIOD for values it does not know', async () => {
        const user = await member(t);
        const plan = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'platinum', billingPeriod: 'monthly' } });
        expect(plan.status).toBe(400);
        expect(plan.body.error).toBe('INVALID_PLAN');
        const period = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'pro', billingPeriod: 'weekly' } });
        expect(period.status).toBe(400);
        expect(period.body.error).toBe('INVALID_BILLING_PERIOD');
      });

      it('upgrade chosen again: the earlier pending order is cancelled and cannot be confirmed', async () => {
        const { teamId, admin: teamAdmin } = await sharedTeam(t);
        const body = { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' };
        const first = await t.request('POST', '/billing/subscription/change-plan', { token: teamAdmin.token, body });
        const second = await t.request('POST', '/billing/subscription/change-plan', { token: teamAdmin.token, body: { ...body, billingPeriod: 'yearly' } });
        expect(second.body.data.order.status).toBe('pending');
        const old = await t.request('GET', `/admin/orders/${first.body.data.order.id}`, { token: administrator.token });
        expect(old.body.status).toBe('canceled');
        const refused = await confirm(first.body.data.order.id);
        expect(refused.status).toBe(409);
        expect((await confirm(second.body.data.order.id)).status).toBe(200);
        const after = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: teamAdmin.token });
        expect(after.body.data.subscription).toMatchObject({ planCode: 'pro', billingPeriod: 'yearly' });
      });

      it('upgrade: returns payment guidance, leaves the plan until paid, then applies it at once with its credits', async () => {
        const { teamId, admin: teamAdmin } = await sharedTeam(t);
        const before = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: teamAdmin.token });
        const r = await t.request('POST', '/billing/subscription/change-plan', { token: teamAdmin.token, body: { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' } });
        expect(r.status).toBe(200);
        expect(r.body.success).toBe(true);
        const data = r.body.data;
        expect(data).toMatchObject({ action: 'payment_required', targetPlanCode: 'pro', billingPeriod: 'monthly', effectiveAt: null });
        expect(data.order).toMatchObject({ kind: 'plan', status: 'pending', planCode: 'pro', amount: 2000, originalAmount: 2000, currency: 'usd', provider: 'manual', teamId });
        expect(data.payment).toMatchObject({ provider: 'manual', url: null, reference: data.order.id });
        expect(data.payment.instructions).toContain(data.order.id);

        // Unchanged until payment.
        const pending = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: teamAdmin.token });
        expect(pending.body.data.subscription).toEqual(before.body.data.subscription);

        t.clock.advance(3 * 86_400_000);
        const paid = await confirm(data.order.id);
        expect(paid.status).toBe(200);
        expect(paid.body.alreadyPaid).toBe(false);
        expect(paid.body.order.status).toBe('paid');
        const after = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: teamAdmin.token });
        expect(after.body.data.subscription).toMatchObject({
          planCode: 'pro',
          billingPeriod: 'monthly',
          status: 'active',
          monthlyCredits: 2000,
          currentPeriodStart: new Date(t.clock.nowMs()).toISOString(),
        });
        expect(after.body.data.balance).toMatchObject({ grantCredits: 2000, purchaseCredits: 0, totalCredits: 2000, periodGrantedCredits: 2000 });
        const ledger = await t.request('GET', `/billing/credits/ledger?teamId=${teamId}`, { token: teamAdmin.token });
        expect(ledger.body.data.items.slice(0, 2).map((e: { kind: string; delta: number }) => [e.kind, e.delta])).toEqual([
          ['grant', 2000],
          ['expiry', -100],
        ]);
        await expectBalanceMatchesLedger(t, teamId);

        // Paying twice applies once.
        const again = await confirm(data.order.id);
        expect(again.body.alreadyPaid).toBe(true);
        const still = await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: teamAdmin.token });
        expect(still.body.data.balance.totalCredits).toBe(2000);
      });

      it('downgrade: schedules the plan for the end of the period; choosing the current plan again cancels it', async () => {
        const user = await member(t);
        const up = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'team', billingPeriod: 'yearly' } });
        await confirm(up.body.data.order.id);
        const current = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription;
        expect(current).toMatchObject({ planCode: 'team', billingPeriod: 'yearly' });

        const down = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' } });
        expect(down.status).toBe(200);
        expect(down.body).toEqual({
          success: true,
          data: { action: 'downgrade_scheduled', scheduledPlanCode: 'pro', scheduledBillingPeriod: 'monthly', effectiveAt: current.currentPeriodEnd },
        });
        const scheduled = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription;
        expect(scheduled).toMatchObject({ planCode: 'team', scheduledPlanCode: 'pro', scheduledBillingPeriod: 'monthly' });

        // Yearly to monthly on the same plan is a downgrade too.
        const shorter = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'team', billingPeriod: 'monthly' } });
        expect(shorter.body.data).toMatchObject({ action: 'downgrade_scheduled', scheduledPlanCode: 'team', scheduledBillingPeriod: 'monthly' });

        const back = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'team', billingPeriod: 'yearly' } });
        expect(back.body).toEqual({ success: true, data: { action: 'scheduled_change_canceled', scheduledPlanCode: null, effectiveAt: null } });
        const cleared = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription;
        expect(cleared).toMatchObject({ planCode: 'team', scheduledPlanCode: null, scheduledBillingPeriod: null });
        const same = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'team', billingPeriod: 'yearly' } });
        expect(same.body.data.action).toBe('unchanged');
      });

      it('refuses a coupon on a change that needs no payment', async () => {
        const user = await member(t);
        const r = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'free', billingPeriod: 'monthly', couponCode: 'ANY' } });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('INVALID_COUPON');
      });
    });

    describe('cancel-renewal and resume-renewal', () => {
      it('answer 400 BAD_REQUEST without teamId, 400 NO_TEAM outside the team, 403 FORBIDDEN for a plain member', async () => {
        const { teamId, plain } = await sharedTeam(t);
        const outsider = await t.register();
        for (const path of ['/billing/subscription/cancel-renewal', '/billing/subscription/resume-renewal']) {
          const missing = await t.request('POST', path, { token: plain.token, body: {} });
          expect(missing.status, path).toBe(400);
          expect(missing.body).toMatchObject({ success: false, error: 'BAD_REQUEST' });
          const noBody = await t.request('POST', path, { token: plain.token });
          expect(noBody.status, path).toBe(400);
          expect(noBody.body.error).toBe('BAD_REQUEST');
          const outside = await t.request('POST', path, { token: outsider.token, body: { teamId } });
          expect(outside.status, path).toBe(400);
          expect(outside.body.error).toBe('NO_TEAM');
          const forbidden = await t.request('POST', path, { token: plain.token, body: { teamId } });
          expect(forbidden.status, path).toBe(403);
          expect(forbidden.body).toMatchObject({ success: false, error: 'FORBIDDEN' });
        }
      });

      it('cancel stops renewal (owner or admin), resume undoes it; both are idempotent', async () => {
        const { teamId, owner, admin: teamAdmin } = await sharedTeam(t);
        const nothing = await t.request('POST', '/billing/subscription/cancel-renewal', { token: owner.token, body: { teamId } });
        expect(nothing.status).toBe(400);
        expect(nothing.body.error).toBe('NOTHING_TO_CANCEL');

        const up = await t.request('POST', '/billing/subscription/change-plan', { token: owner.token, body: { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' } });
        await confirm(up.body.data.order.id);
        const cancel = await t.request('POST', '/billing/subscription/cancel-renewal', { token: teamAdmin.token, body: { teamId } });
        expect(cancel.status).toBe(200);
        expect(cancel.body).toEqual({ success: true });
        const canceled = (await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: owner.token })).body.data.subscription;
        expect(canceled).toMatchObject({ planCode: 'pro', cancelAtPeriodEnd: true, canceledAt: new Date(t.clock.nowMs()).toISOString() });
        expect((await t.request('POST', '/billing/subscription/cancel-renewal', { token: owner.token, body: { teamId } })).body).toEqual({ success: true });

        const resume = await t.request('POST', '/billing/subscription/resume-renewal', { token: owner.token, body: { teamId } });
        expect(resume.status).toBe(200);
        expect(resume.body).toEqual({ success: true });
        const resumed = (await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: owner.token })).body.data.subscription;
        expect(resumed).toMatchObject({ planCode: 'pro', cancelAtPeriodEnd: false, canceledAt: null });
        expect((await t.request('POST', '/billing/subscription/resume-renewal', { token: teamAdmin.token, body: { teamId } })).body).toEqual({ success: true });
      });
    });

    it('lists plans and credit packs publicly', async () => {
      const r = await t.request('GET', '/billing/plans');
      expect(r.status).toBe(200);
      expect(r.body.data.fallbackPlan).toBe('free');
      expect(r.body.data.plans.map((p: { code: string }) => p.code)).toEqual(['free', 'pro', 'team']);
      expect(r.body.data.plans[1]).toEqual({ code: 'pro', name: 'Pro', rank: 10, monthlyCredits: 2000, monthlyPrice: 2000, yearlyPrice: 20000, currency: 'usd' });
      expect(r.body.data.creditPacks.length).toBeGreaterThan(0);
    });
  });
});

/** A provider with a bug: its webhook parser throws a plain Error that names a secret. */
class FaultyProvider extends AbstractPaymentProvider {
  static override readonly identifier = 'faulty';
  readonly manualConfirmation = false;
  async createCheckout(): Promise<Checkout> {
    return { reference: 'x', url: 'https://pay.example/x', instructions: null, expiresAt: null };
  }
  async parseWebhook(): Promise<PaymentEvent[]> {
    throw new Error('connection to vault failed with password hunter2');
  }
}

// The spec's 500 row: an unexpected failure answers 500 in the billing envelope and reveals nothing.
describe.each(testDatabases())('billing 500 on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    beforeAll(async () => {
      t = await startBillingHost(db, transport, { adapters: [provide(paymentProviderServiceIdentifier, new FaultyProvider())] });
    });
    afterAll(() => t?.close());

    it('answers 500 internal_error with the request id and no internals', async () => {
      const r = await t.request('POST', '/billing/webhooks/faulty', { raw: '{}', headers: { 'content-type': 'application/json', 'x-request-id': 'billing-500-check' } });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ success: false, error: 'internal_error', message: 'An internal error occurred (request billing-500-check).' });
      expect(r.text).not.toContain('hunter2');
    });
  });
});
