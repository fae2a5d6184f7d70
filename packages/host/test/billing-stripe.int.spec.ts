import { PaymentOrder, paymentProviderServiceIdentifier, provide } from '@trellis/core';
import { StripePaymentProvider } from '@trellis/payments-stripe';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutCompletedEvent, signLikeStripe, StripeStandIn } from '../../adapters/payments-stripe/test/stripe-stand-in.js';
import { expectBalanceMatchesLedger, member, runExpiry, startBillingHost, userWith, type BillingHost } from './billing-helpers.js';

const secretKey = 'sk_test_trellis_host';
const webhookSecret = 'whsec_trellis_host_secret';

// Billing with the Stripe adapter: Checkout Sessions against a local stand-in of Stripe's API,
// and signed webhook deliveries sent to the host. No network.
describe.each(testDatabases())('billing with Stripe on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: BillingHost;
    let stripe: StripeStandIn;
    let administrator: Awaited<ReturnType<typeof userWith>>;
    let events = 0;

    beforeAll(async () => {
      stripe = await new StripeStandIn(secretKey).start();
      const provider = new StripePaymentProvider({
        secretKey,
        webhookSecret,
        apiBaseUrl: stripe.url,
        successUrl: 'https://app.example/billing/done?session={CHECKOUT_SESSION_ID}',
        cancelUrl: 'https://app.example/billing',
      });
      t = await startBillingHost(db, transport, { adapters: [provide(paymentProviderServiceIdentifier, provider)] });
      administrator = await userWith(t, { isAdministrator: true });
    });
    afterAll(async () => {
      await t?.close();
      await stripe?.close();
    });

    /** POSTs a delivery exactly as Stripe would: the raw bytes, signed. */
    const deliver = (body: string | Buffer, header = signLikeStripe(webhookSecret, body)) =>
      t.request('POST', '/billing/webhooks/stripe', { raw: body, headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': header } });

    const paidEvent = (order: { id: string; amount: number; currency: string; providerReference: string }, overrides: { amount?: number } = {}) =>
      JSON.stringify(
        checkoutCompletedEvent(`evt_${++events}_${transport}_${db.name}`, { id: order.providerReference, orderId: order.id, amount: overrides.amount ?? order.amount, currency: order.currency }),
        null,
        2,
      );

    async function upgrade(token: string, teamId: string, extra: Record<string, string> = {}) {
      const r = await t.request('POST', '/billing/subscription/change-plan', { token, body: { teamId, targetPlanCode: 'pro', billingPeriod: 'yearly', ...extra } });
      expect(r.status).toBe(200);
      return r.body.data;
    }

    it('creates a Checkout Session for an upgrade and returns its URL as payment guidance', async () => {
      const user = await member(t);
      const data = await upgrade(user.token, user.teamId);
      expect(data.action).toBe('payment_required');
      const sent = stripe.requests.at(-1)!;
      expect(sent.form).toMatchObject({
        mode: 'payment',
        'line_items[0][price_data][unit_amount]': '20000',
        'line_items[0][price_data][currency]': 'usd',
        'line_items[0][price_data][product_data][name]': 'Pro plan (yearly)',
        client_reference_id: data.order.id,
        customer_email: user.email,
      });
      expect(sent.headers['idempotency-key']).toBe(`trellis:${data.order.id}:1`);
      expect(data.payment).toMatchObject({ provider: 'stripe', url: expect.stringMatching(/\/pay\/cs_test_/), instructions: null });
      expect(data.order).toMatchObject({ provider: 'stripe', providerReference: data.payment.reference, paymentUrl: data.payment.url, status: 'pending' });
    });

    it('applies a paid order from a signed webhook once, however often it is delivered', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      const body = paidEvent(order);
      const first = await deliver(body);
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ received: 1, applied: 1, duplicates: 0 });
      const after = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data;
      expect(after.subscription).toMatchObject({ planCode: 'pro', billingPeriod: 'yearly', status: 'active' });
      expect(after.balance.grantCredits).toBe(2000);

      // Redelivered, in sequence and in parallel: recorded as duplicates, nothing applied again.
      const again = await deliver(body);
      expect(again.body).toEqual({ received: 1, applied: 0, duplicates: 1 });
      const parallel = await Promise.all(Array.from({ length: 6 }, () => deliver(body)));
      for (const r of parallel) expect(r.body).toEqual({ received: 1, applied: 0, duplicates: 1 });
      const orders = await t.request('GET', `/admin/orders/${order.id}`, { token: administrator.token });
      expect(orders.body).toMatchObject({ status: 'paid', paidVia: expect.stringMatching(/^provider:evt_/) });
      expect((await t.request('GET', '/billing/subscription', { token: user.token })).body.data.balance.grantCredits).toBe(2000);
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('applies a new event delivered many times in parallel exactly once', async () => {
      const user = await member(t);
      const pack = await t.request('POST', '/billing/credits/purchase', { token: user.token, body: { teamId: user.teamId, packCode: 'credits-1000' } });
      expect(pack.status).toBe(200);
      expect(pack.body.data.payment.provider).toBe('stripe');
      const body = paidEvent(pack.body.data.order);
      const results = await Promise.all(Array.from({ length: 8 }, () => deliver(body)));
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(results.filter((r) => r.body.applied === 1)).toHaveLength(1);
      expect(results.filter((r) => r.body.duplicates === 1)).toHaveLength(7);
      const balance = (await t.request('GET', '/billing/subscription', { token: user.token })).body.data.balance;
      expect(balance).toMatchObject({ purchaseCredits: 1000, grantCredits: 100, totalCredits: 1100 });
      await expectBalanceMatchesLedger(t, user.teamId);
    });

    it('refuses deliveries whose signature does not verify, with 400 INVALID_SIGNATURE', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      const body = paidEvent(order);
      const cases: Array<{ name: string; headers: Record<string, string>; raw?: string }> = [
        { name: 'missing', headers: { 'content-type': 'application/json' } },
        { name: 'other secret', headers: { 'content-type': 'application/json', 'stripe-signature': signLikeStripe('whsec_wrong', body) } },
        { name: 'stale', headers: { 'content-type': 'application/json', 'stripe-signature': signLikeStripe(webhookSecret, body, Math.floor(Date.now() / 1000) - 3600) } },
        { name: 'body changed', headers: { 'content-type': 'application/json', 'stripe-signature': signLikeStripe(webhookSecret, body) }, raw: body.replace('"paid"', '"unpaid"') },
      ];
      for (const c of cases) {
        const r = await t.request('POST', '/billing/webhooks/stripe', { raw: c.raw ?? body, headers: c.headers });
        expect(r.status, c.name).toBe(400);
        expect(r.body, c.name).toMatchObject({ success: false, error: 'INVALID_SIGNATURE' });
      }
      const stored = await t.kernel.fork().findOneOrFail(PaymentOrder, { id: order.id });
      expect(stored.status).toBe('pending');
      // The same bytes, signed properly, go through: the signature covers the raw body exactly.
      expect((await deliver(body)).body.applied).toBe(1);
    });

    it('verifies over the exact bytes received, including non-ASCII text and whitespace', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      const event = JSON.parse(paidEvent(order));
      event.data.object.customer_details = { name: 'Zoë Ångström 漢字' };
      const body = Buffer.from(`  ${JSON.stringify(event, null, 4)}\n`, 'utf8');
      const r = await deliver(body);
      expect(r.status).toBe(200);
      expect(r.body.applied).toBe(1);
    });

    it('does not mark an order paid when the amount paid differs', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      const r = await deliver(paidEvent(order, { amount: 1 }));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ received: 1, applied: 0, duplicates: 0 });
      expect((await t.kernel.fork().findOneOrFail(PaymentOrder, { id: order.id })).status).toBe('pending');
      expect((await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription.planCode).toBe('free');
    });

    it('answers 404 for a provider that is not in use, and ignores unrelated events', async () => {
      const manual = await t.request('POST', '/billing/webhooks/manual', { raw: '{}', headers: { 'content-type': 'application/json' } });
      expect(manual.status).toBe(404);
      expect(manual.body.error).toBe('UNKNOWN_PAYMENT_PROVIDER');
      const other = JSON.stringify({ id: `evt_other_${transport}_${db.name}`, type: 'invoice.created', data: { object: {} } });
      expect((await deliver(other)).body).toEqual({ received: 1, applied: 0, duplicates: 0 });
    });

    it('answers 502 PAYMENT_PROVIDER_ERROR when Stripe fails, cancels the order and gives the coupon back', async () => {
      const coupon = await t.request('POST', '/admin/coupons', { token: administrator.token, body: { code: `FAIL${transport}${db.name}`, percentOff: 10, maxRedemptions: 1 } });
      expect(coupon.status).toBe(201);
      const user = await member(t);
      stripe.failWith = { status: 500, message: 'internal stripe trouble sk_live_secret' };
      let r;
      try {
        r = await t.request('POST', '/billing/subscription/change-plan', { token: user.token, body: { teamId: user.teamId, targetPlanCode: 'pro', billingPeriod: 'monthly', couponCode: coupon.body.code } });
      } finally {
        stripe.failWith = null;
      }
      expect(r.status).toBe(502);
      expect(r.body).toMatchObject({ success: false, error: 'PAYMENT_PROVIDER_ERROR' });
      expect(r.text).not.toContain('stripe trouble');
      const orders = await t.request('GET', `/admin/orders?teamId=${user.teamId}`, { token: administrator.token });
      expect(orders.body.items.length).toBeGreaterThan(0);
      for (const order of orders.body.items) expect(order.status).toBe('canceled');
      const after = await t.request('GET', `/admin/coupons/${coupon.body.id}`, { token: administrator.token });
      expect(after.body.redemptions).toBe(0);
      // The redemption is available again.
      const ok = await upgrade(user.token, user.teamId, { couponCode: coupon.body.code });
      expect(ok.order).toMatchObject({ amount: 18000, discountAmount: 2000, couponCode: coupon.body.code.toUpperCase() });
    });

    it('refuses administrator confirmation of a Stripe order (409 order_not_manual)', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      const r = await t.request('POST', `/admin/orders/${order.id}/confirm`, { token: administrator.token });
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('order_not_manual');
    });

    it('still applies a payment that arrives after the order expired', async () => {
      const user = await member(t);
      const { order } = await upgrade(user.token, user.teamId);
      t.clock.advance(25 * 3600_000);
      expect((await runExpiry(t)).orders).toBeGreaterThan(0);
      expect((await t.kernel.fork().findOneOrFail(PaymentOrder, { id: order.id })).status).toBe('expired');
      const r = await deliver(paidEvent(order));
      expect(r.body.applied).toBe(1);
      expect((await t.request('GET', '/billing/subscription', { token: user.token })).body.data.subscription.planCode).toBe('pro');
    });

    it('gives a pending order a fresh checkout on request', async () => {
      const user = await member(t);
      const { order, payment } = await upgrade(user.token, user.teamId);
      const r = await t.request('POST', `/billing/orders/${order.id}/checkout`, { token: user.token });
      expect(r.status).toBe(200);
      expect(r.body.data.reference).not.toBe(payment.reference);
      expect(stripe.requests.at(-1)!.headers['idempotency-key']).toBe(`trellis:${order.id}:2`);
      const stranger = await member(t);
      const denied = await t.request('POST', `/billing/orders/${order.id}/checkout`, { token: stranger.token });
      expect(denied.status).toBe(404);
      expect(denied.body.error).toBe('ORDER_NOT_FOUND');
    });
  });
});
