import { randomUUID } from 'node:crypto';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectBalanceMatchesLedger, member, runExpiry, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

// Orders and coupons, the spec's administrator categories: administrators list and read orders,
// confirm manual payments, and manage coupons; coupons apply to payment orders, race-free.
describe.each(testDatabases())('billing orders and coupons on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    let administrator: Awaited<ReturnType<typeof userWith>>;
    let codes = 0;

    beforeAll(async () => {
      t = await startBillingHost(db, transport);
      administrator = await userWith(t, { isAdministrator: true });
    });
    afterAll(() => t?.close());

    const admin = (method: string, path: string, body?: unknown) => t.request(method, path, { token: administrator.token, body });
    const code = (prefix: string) => `${prefix}${++codes}${transport}${db.name}`.toUpperCase();
    const upgrade = (user: { token: string; teamId: string }, couponCode?: string, plan = 'pro') =>
      t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: plan, billingPeriod: 'monthly', ...(couponCode ? { couponCode } : {}) } });

    it('keeps every administrator route behind the administrator permission', async () => {
      const plain = await t.register();
      const id = randomUUID();
      const routes: Array<[string, string]> = [
        ['GET', '/admin/orders'],
        ['GET', `/admin/orders/${id}`],
        ['POST', `/admin/orders/${id}/confirm`],
        ['GET', '/admin/coupons'],
        ['POST', '/admin/coupons'],
        ['GET', `/admin/coupons/${id}`],
        ['POST', `/admin/coupons/${id}/disable`],
      ];
      for (const [method, path] of routes) {
        const anonymous = await t.request(method, path);
        expect(anonymous.status, `${method} ${path}`).toBe(401);
        const denied = await t.request(method, path, { token: plain.token, ...(method === 'POST' ? { body: {} } : {}) });
        expect(denied.status, `${method} ${path}`).toBe(403);
        expect(denied.body.error).toBe('permission_denied');
      }
    });

    it('lists and reads orders, filtered by status, kind and team', async () => {
      const user = await member(t);
      const placed = await upgrade(user);
      const orderId = placed.body.data.order.id;
      const list = await admin('GET', `/admin/orders?teamId=${user.teamId}`);
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 1, page: 1, size: 20 });
      expect(list.body.items[0]).toMatchObject({ id: orderId, teamId: user.teamId, kind: 'plan', status: 'pending', amount: 2000 });
      expect((await admin('GET', `/admin/orders?teamId=${user.teamId}&status=paid`)).body.total).toBe(0);
      expect((await admin('GET', `/admin/orders?teamId=${user.teamId}&kind=plan&status=pending`)).body.total).toBe(1);
      expect((await admin('GET', '/admin/orders?status=bogus')).status).toBe(422);
      const one = await admin('GET', `/admin/orders/${orderId}`);
      expect(one.body).toEqual(list.body.items[0]);
      const missing = await admin('GET', `/admin/orders/${randomUUID()}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe('order_not_found');
      expect((await admin('GET', '/admin/orders/not-a-uuid')).status).toBe(404);
    });

    it('confirms a manual order once; a cancelled order cannot be confirmed', async () => {
      const user = await member(t);
      const orderId = (await upgrade(user)).body.data.order.id;
      const first = await admin('POST', `/admin/orders/${orderId}/confirm`);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ alreadyPaid: false, order: { status: 'paid', paidVia: `admin:${administrator.userId}` } });
      const parallel = await Promise.all(Array.from({ length: 4 }, () => admin('POST', `/admin/orders/${orderId}/confirm`)));
      for (const r of parallel) expect(r.body.alreadyPaid).toBe(true);
      expect((await t.request('GET', '/billing/subscription', { token: user.token })).body.data.balance.grantCredits).toBe(2000);
      await expectBalanceMatchesLedger(t, user.teamId);

      // A coupon worth more than the price leaves nothing to pay: applied at once, no order to confirm.
      const gift = await admin('POST', '/admin/coupons', { code: code('GIFT'), amountOff: 1_000_000 });
      const free = await upgrade(user, gift.body.code, 'team');
      expect(free.body.data).toMatchObject({ action: 'upgraded', targetPlanCode: 'team', order: { status: 'paid', amount: 0, paidVia: 'free' } });
      expect((await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription.planCode).toBe('team');

      // Orders placed through a failing provider are cancelled (see the Stripe suite); an expired one may still be confirmed.
      const other = await member(t);
      const stale = (await upgrade(other)).body.data.order.id;
      t.clock.advance(25 * 3600_000);
      await runExpiry(t);
      expect((await admin('GET', `/admin/orders/${stale}`)).body.status).toBe('expired');
      expect((await admin('POST', `/admin/orders/${stale}/confirm`)).body).toMatchObject({ alreadyPaid: false, order: { status: 'paid' } });
    });

    it('creates, lists, reads and disables coupons', async () => {
      const c = code('launch');
      const created = await admin('POST', '/admin/coupons', { code: c.toLowerCase(), percentOff: 25, maxRedemptions: 5, expiresAt: new Date(t.clock.nowMs() + 30 * 86_400_000).toISOString() });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ code: c, percentOff: 25, amountOff: null, maxRedemptions: 5, redemptions: 0, disabled: false });
      expect((await admin('POST', '/admin/coupons', { code: c, amountOff: 100 })).body.error).toBe('coupon_code_taken');
      expect((await admin('POST', '/admin/coupons', { code: code('X'), percentOff: 10, amountOff: 100 })).status).toBe(422);
      expect((await admin('POST', '/admin/coupons', { code: code('X') })).body.error).toBe('invalid_coupon');
      expect((await admin('POST', '/admin/coupons', { code: code('X'), percentOff: 101 })).status).toBe(422);
      expect((await admin('POST', '/admin/coupons', { code: code('X'), percentOff: 5, expiresAt: '2000-01-01T00:00:00Z' })).body.error).toBe('invalid_coupon');
      expect((await admin('POST', '/admin/coupons', { code: 'no spaces', percentOff: 5 })).status).toBe(422);

      expect((await admin('GET', `/admin/coupons/${created.body.id}`)).body).toEqual(created.body);
      const disabled = await admin('POST', `/admin/coupons/${created.body.id}/disable`);
      expect(disabled.body).toMatchObject({ disabled: true, disabledAt: expect.any(String) });
      expect((await admin('POST', `/admin/coupons/${created.body.id}/disable`)).body.disabledAt).toBe(disabled.body.disabledAt);
      const active = await admin('GET', '/admin/coupons?size=100');
      expect(active.body.items.map((x: { id: string }) => x.id)).not.toContain(created.body.id);
      const all = await admin('GET', '/admin/coupons?size=100&includeDisabled=true');
      expect(all.body.items.map((x: { id: string }) => x.id)).toContain(created.body.id);

      const user = await member(t);
      const refused = await upgrade(user, c);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ success: false, error: 'INVALID_COUPON' });
    });

    it('applies percent and amount coupons to the order amount', async () => {
      const percent = await admin('POST', '/admin/coupons', { code: code('PCT'), percentOff: 15 });
      const amount = await admin('POST', '/admin/coupons', { code: code('AMT'), amountOff: 500 });
      const a = await upgrade(await member(t), percent.body.code.toLowerCase());
      expect(a.body.data.order).toMatchObject({ originalAmount: 2000, discountAmount: 300, amount: 1700, couponCode: percent.body.code });
      const b = await upgrade(await member(t), amount.body.code);
      expect(b.body.data.order).toMatchObject({ originalAmount: 2000, discountAmount: 500, amount: 1500 });
      const pack = await member(t);
      const p = await t.request('POST', '/billing/credits/purchase', { token: pack.token, body: { teamId: pack.teamId, packCode: 'credits-5000', couponCode: percent.body.code } });
      expect(p.body.data.order).toMatchObject({ kind: 'credits', credits: 5000, originalAmount: 4500, discountAmount: 675, amount: 3825 });
      expect((await t.request('POST', '/billing/credits/purchase', { token: pack.token, body: { teamId: pack.teamId, packCode: 'nope' } })).body.error).toBe('INVALID_CREDIT_PACK');
      expect((await upgrade(await member(t), 'NO-SUCH-COUPON')).body.error).toBe('INVALID_COUPON');
    });

    it('refuses an expired coupon', async () => {
      const c = await admin('POST', '/admin/coupons', { code: code('SOON'), percentOff: 50, expiresAt: new Date(t.clock.nowMs() + 3600_000).toISOString() });
      t.clock.advance(3600_000);
      const r = await upgrade(await member(t), c.body.code);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('INVALID_COUPON');
      expect(r.body.message).toContain('expired');
    });

    it('never redeems a coupon more often than it allows, even in parallel', async () => {
      const c = await admin('POST', '/admin/coupons', { code: code('RACE'), percentOff: 10, maxRedemptions: 3 });
      const users = await Promise.all(Array.from({ length: 10 }, () => member(t)));
      const results = await Promise.all(users.map((u) => upgrade(u, c.body.code)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(3);
      const refused = results.filter((r) => r.status !== 200);
      expect(refused).toHaveLength(7);
      for (const r of refused) expect(r.body).toMatchObject({ success: false, error: 'COUPON_EXHAUSTED' });
      expect((await admin('GET', `/admin/coupons/${c.body.id}`)).body.redemptions).toBe(3);
    });

    it('gives a redemption back when its order expires', async () => {
      const c = await admin('POST', '/admin/coupons', { code: code('ONCE'), amountOff: 100, maxRedemptions: 1 });
      const first = await upgrade(await member(t), c.body.code);
      expect(first.status).toBe(200);
      const second = await member(t);
      expect((await upgrade(second, c.body.code)).body.error).toBe('COUPON_EXHAUSTED');
      t.clock.advance(24 * 3600_000 + 1000);
      await runExpiry(t);
      expect((await admin('GET', `/admin/coupons/${c.body.id}`)).body.redemptions).toBe(0);
      const retry = await upgrade(second, c.body.code);
      expect(retry.status).toBe(200);
      expect(retry.body.data.order.discountAmount).toBe(100);
      // The expired order paid late still counts its redemption (the payer got the discount).
      await admin('POST', `/admin/orders/${first.body.data.order.id}/confirm`);
      expect((await admin('GET', `/admin/coupons/${c.body.id}`)).body.redemptions).toBe(2);
    });

    it('adds a paid credit pack to the purchased credits', async () => {
      const user = await member(t);
      const r = await t.request('POST', '/billing/credits/purchase', { token: user.token, body: { teamId: user.teamId, packCode: 'credits-1000' } });
      expect(r.status).toBe(200);
      expect(r.body.data.payment).toMatchObject({ provider: 'manual', url: null });
      await admin('POST', `/admin/orders/${r.body.data.order.id}/confirm`);
      const { balance } = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data;
      expect(balance).toMatchObject({ grantCredits: 100, purchaseCredits: 1000, totalCredits: 1100 });
      const entry = (await t.request('GET', '/billing/credits/ledger', { token: user.token })).body.data.items[0];
      expect(entry).toMatchObject({ kind: 'purchase', purchaseDelta: 1000, orderId: r.body.data.order.id });
      const orders = await t.request('GET', '/billing/orders', { token: user.token });
      expect(orders.body.data.items[0]).toMatchObject({ id: r.body.data.order.id, status: 'paid' });
    });
  });
});
