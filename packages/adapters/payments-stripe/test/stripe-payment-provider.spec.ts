import { createHmac } from 'node:crypto';
import { TrellisError } from '@trellis/core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRIPE_API_VERSION, StripePaymentProvider } from '../src/index.js';
import { checkoutCompletedEvent, signLikeStripe, StripeStandIn } from './stripe-stand-in.js';

const secretKey = 'sk_test_trellis123';
const webhookSecret = 'whsec_test_secret_value';
const now = Date.parse('2026-03-01T10:00:00Z');
const nowSeconds = Math.floor(now / 1000);
const urls = { successUrl: 'https://app.example/paid?session={CHECKOUT_SESSION_ID}', cancelUrl: 'https://app.example/billing' };

const expectSignatureError = async (run: () => Promise<unknown>, message: RegExp) => {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(TrellisError);
    expect((error as TrellisError).code).toBe('INVALID_SIGNATURE');
    expect((error as TrellisError).status).toBe(400);
    expect((error as Error).message).toMatch(message);
    return;
  }
  throw new Error('expected INVALID_SIGNATURE');
};

describe('StripePaymentProvider options', () => {
  const good = { secretKey, webhookSecret, ...urls };

  it('accepts good options and names the first bad one', () => {
    expect(new StripePaymentProvider(good).id).toBe('stripe');
    expect(() => new StripePaymentProvider({ ...good, secretKey: 'pk_test_public' })).toThrow(/option secretKey/);
    expect(() => new StripePaymentProvider({ ...good, webhookSecret: 'secret' })).toThrow(/option webhookSecret/);
    expect(() => new StripePaymentProvider({ ...good, successUrl: '/relative' })).toThrow(/option successUrl/);
    expect(() => new StripePaymentProvider({ ...good, apiBaseUrl: 'ftp://x' })).toThrow(/option apiBaseUrl/);
    expect(() => new StripePaymentProvider({ ...good, apiBaseUrl: 'https://proxy.example/stripe' })).toThrow(/option apiBaseUrl must be an origin/);
    expect(() => new StripePaymentProvider({ ...good, webhookToleranceSeconds: 0 })).toThrow(/option webhookToleranceSeconds/);
    expect(() => new StripePaymentProvider({ ...good, maxNetworkRetries: -1 })).toThrow(/option maxNetworkRetries/);
  });
});

describe('Stripe-Signature verification (webhooks.constructEvent)', () => {
  const provider = new StripePaymentProvider({ secretKey, webhookSecret, ...urls, now: () => now });
  const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'customer.created', data: { object: {} } });
  const check = (header: string | undefined, rawBody: string = body) =>
    provider.parseWebhook({ headers: header === undefined ? {} : { 'stripe-signature': header }, rawBody: Buffer.from(rawBody) });
  const v1 = (secret: string, timestamp: number, payload: string) => createHmac('sha256', secret).update(`${timestamp}.${payload}`).digest('hex');

  it("accepts a signature over t.rawBody with the endpoint secret, made by hand or by the SDK's test helper", async () => {
    const independent = signLikeStripe(webhookSecret, body, nowSeconds);
    expect(independent).toBe(Stripe.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret, timestamp: nowSeconds }));
    expect(await check(independent)).toEqual([{ id: 'evt_1', type: 'ignored', eventType: 'customer.created' }]);
  });

  it('accepts any matching v1 entry (secret rotation) and ignores v0 and unknown keys', async () => {
    const good = v1(webhookSecret, nowSeconds, body);
    const other = v1('whsec_old', nowSeconds, body);
    expect(await check(`t=${nowSeconds},v1=${other},v0=${good},v1=${good},x=1`)).toHaveLength(1);
  });

  it('refuses a changed body, another secret, a missing or malformed header', async () => {
    const header = signLikeStripe(webhookSecret, body, nowSeconds);
    await expectSignatureError(() => check(header, body.replace('evt_1', 'evt_2')), /matches/);
    await expectSignatureError(() => check(signLikeStripe('whsec_other', body, nowSeconds)), /matches/);
    await expectSignatureError(() => check(undefined), /missing/);
    await expectSignatureError(() => check('garbage'), /no timestamp/);
    await expectSignatureError(() => check(`t=${nowSeconds}`), /no v1/);
    await expectSignatureError(() => check(`t=${nowSeconds},v1=abcd`), /matches/);
  });

  it('refuses signatures older than the tolerance (a replay)', async () => {
    await expectSignatureError(() => check(signLikeStripe(webhookSecret, body, nowSeconds - 301)), /more than 300 seconds old/);
    expect(await check(signLikeStripe(webhookSecret, body, nowSeconds - 299))).toHaveLength(1);
  });

  it('refuses a signed body that is not JSON', async () => {
    await expectSignatureError(() => check(signLikeStripe(webhookSecret, 'not json', nowSeconds), 'not json'), /not JSON/);
  });
});

describe('StripePaymentProvider against a stand-in API', () => {
  let stripe: StripeStandIn;
  let provider: StripePaymentProvider;

  beforeAll(async () => {
    stripe = await new StripeStandIn(secretKey).start();
    provider = new StripePaymentProvider({ secretKey, webhookSecret, apiBaseUrl: `${stripe.url}/`, ...urls, now: () => now });
  });
  afterAll(() => stripe?.close());

  const request = {
    orderId: '0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f90',
    teamId: '0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f91',
    description: 'Pro plan (monthly)',
    amount: 1600,
    currency: 'usd',
    expiresAt: new Date(now + 6 * 3600_000),
    customerEmail: 'ada@example.com',
    idempotencyKey: 'order-1:1',
  };

  it('creates a Checkout Session through the SDK: form-encoded, secret key as Bearer, pinned API version', async () => {
    const checkout = await provider.createCheckout(request);
    expect(checkout.reference).toMatch(/^cs_test_/);
    expect(checkout.url).toBe(`${stripe.url}/pay/${checkout.reference}`);
    expect(checkout.instructions).toBeNull();
    expect(checkout.expiresAt?.getTime()).toBe(Math.floor(request.expiresAt.getTime() / 1000) * 1000);
    const sent = stripe.requests.at(-1)!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/checkout/sessions');
    expect(sent.headers['idempotency-key']).toBe('trellis:order-1:1');
    expect(sent.headers['stripe-version']).toBe(STRIPE_API_VERSION);
    expect(sent.headers['stripe-version']).toBe(Stripe.API_VERSION);
    expect(sent.headers['user-agent']).toMatch(/^Stripe\/v1 NodeBindings\/\S+ Trellis/);
    expect(sent.form).toEqual({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '1600',
      'line_items[0][price_data][product_data][name]': 'Pro plan (monthly)',
      success_url: 'https://app.example/paid?session={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://app.example/billing',
      client_reference_id: request.orderId,
      'metadata[trellis_order_id]': request.orderId,
      'metadata[trellis_team_id]': request.teamId,
      'payment_intent_data[metadata][trellis_order_id]': request.orderId,
      expires_at: String(Math.floor(request.expiresAt.getTime() / 1000)),
      customer_email: 'ada@example.com',
    });
  });

  it('keeps the session expiry within the 30 minutes to 24 hours Stripe accepts', async () => {
    await provider.createCheckout({ ...request, idempotencyKey: 'short:1', expiresAt: new Date(now + 60_000) });
    expect(Number(stripe.requests.at(-1)!.form['expires_at'])).toBe(nowSeconds + 31 * 60);
    await provider.createCheckout({ ...request, idempotencyKey: 'long:1', expiresAt: new Date(now + 7 * 86_400_000) });
    expect(Number(stripe.requests.at(-1)!.form['expires_at'])).toBe(nowSeconds + 24 * 3600 - 60);
  });

  it('retries a transient failure with the same idempotency key, and one checkout comes of it', async () => {
    stripe.failNext(1, 503);
    const before = stripe.requests.length;
    const checkout = await provider.createCheckout({ ...request, idempotencyKey: 'retry:1' });
    const sent = stripe.requests.slice(before);
    expect(sent).toHaveLength(2);
    expect(sent.map((r) => r.headers['idempotency-key'])).toEqual(['trellis:retry:1', 'trellis:retry:1']);
    // Asking again for the same attempt replays Stripe's answer: the same session, not a second one.
    expect((await provider.createCheckout({ ...request, idempotencyKey: 'retry:1' })).reference).toBe(checkout.reference);
  });

  it('gives up after the configured retries', async () => {
    const once = new StripePaymentProvider({ secretKey, webhookSecret, apiBaseUrl: stripe.url, ...urls, now: () => now, maxNetworkRetries: 0 });
    stripe.failNext(1, 500, 'Stripe is having a moment.');
    await expect(once.createCheckout({ ...request, idempotencyKey: 'no-retry:1' })).rejects.toThrow(/Stripe answered 500 \(api_error\): Stripe is having a moment/);
  });

  it("reports Stripe's error", async () => {
    stripe.failWith = { status: 402, message: 'Your account cannot currently make live charges.' };
    try {
      await expect(provider.createCheckout({ ...request, idempotencyKey: 'fail:1' })).rejects.toThrow(/Stripe answered 402 \(api_error\): Your account cannot/);
    } finally {
      stripe.failWith = null;
    }
    const wrongKey = new StripePaymentProvider({ secretKey: 'sk_test_wrong', webhookSecret, apiBaseUrl: stripe.url, successUrl: 'https://a.example', cancelUrl: 'https://a.example' });
    await expect(wrongKey.createCheckout(request)).rejects.toThrow(/Stripe answered 401 \(invalid_request_error\): Invalid API Key/);
    const closed = new StripePaymentProvider({ secretKey, webhookSecret, apiBaseUrl: 'http://127.0.0.1:9', ...urls, maxNetworkRetries: 0 });
    await expect(closed.createCheckout(request)).rejects.toThrow(/Stripe could not be reached/);
  });

  it('turns a verified delivery into payment events', async () => {
    const deliver = (event: unknown) => {
      const rawBody = Buffer.from(JSON.stringify(event));
      return provider.parseWebhook({ headers: { 'stripe-signature': signLikeStripe(webhookSecret, rawBody, nowSeconds) }, rawBody });
    };
    const session = { id: 'cs_test_9', orderId: request.orderId, amount: 1600, currency: 'usd' };
    expect(await deliver(checkoutCompletedEvent('evt_paid', session))).toEqual([
      { id: 'evt_paid', type: 'order.paid', orderId: request.orderId, reference: 'cs_test_9', amount: 1600, currency: 'usd' },
    ]);
    expect(await deliver(checkoutCompletedEvent('evt_async', { ...session, paymentStatus: 'unpaid' }, 'checkout.session.async_payment_succeeded'))).toMatchObject([
      { type: 'order.paid' },
    ]);
    // Completed but not paid yet (a delayed payment method): wait for async_payment_succeeded.
    expect(await deliver(checkoutCompletedEvent('evt_unpaid', { ...session, paymentStatus: 'unpaid' }))).toEqual([
      { id: 'evt_unpaid', type: 'ignored', eventType: 'checkout.session.completed' },
    ]);
    expect(await deliver({ id: 'evt_other', type: 'customer.created', data: { object: {} } })).toEqual([{ id: 'evt_other', type: 'ignored', eventType: 'customer.created' }]);
  });
});
