import { TrellisError } from '@trellis/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload, StripePaymentProvider, stripeSignatureHeader, verifyStripeSignature } from '../src/index.js';
import { checkoutCompletedEvent, signLikeStripe, StripeStandIn } from './stripe-stand-in.js';

const secretKey = 'sk_test_trellis123';
const webhookSecret = 'whsec_test_secret_value';
const now = Date.parse('2026-03-01T10:00:00Z');
const nowSeconds = Math.floor(now / 1000);

const expectSignatureError = (run: () => unknown, message: RegExp) => {
  try {
    run();
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
  const good = { secretKey, webhookSecret, successUrl: 'https://app.example/paid?session={CHECKOUT_SESSION_ID}', cancelUrl: 'https://app.example/billing' };

  it('accepts good options and names the first bad one', () => {
    expect(new StripePaymentProvider(good).id).toBe('stripe');
    expect(() => new StripePaymentProvider({ ...good, secretKey: 'pk_test_public' })).toThrow(/option secretKey/);
    expect(() => new StripePaymentProvider({ ...good, webhookSecret: 'secret' })).toThrow(/option webhookSecret/);
    expect(() => new StripePaymentProvider({ ...good, successUrl: '/relative' })).toThrow(/option successUrl/);
    expect(() => new StripePaymentProvider({ ...good, apiBaseUrl: 'ftp://x' })).toThrow(/option apiBaseUrl/);
    expect(() => new StripePaymentProvider({ ...good, webhookToleranceSeconds: 0 })).toThrow(/option webhookToleranceSeconds/);
  });
});

describe('Stripe-Signature verification', () => {
  const body = JSON.stringify({ id: 'evt_1', type: 'checkout.session.completed' });
  const check = (header: string | undefined, rawBody: string = body, at = nowSeconds) =>
    verifyStripeSignature({ header, rawBody: Buffer.from(rawBody), secret: webhookSecret, toleranceSeconds: 300, nowSeconds: at });

  it('accepts a signature over t.rawBody with the endpoint secret', () => {
    expect(() => check(stripeSignatureHeader(webhookSecret, body, nowSeconds))).not.toThrow();
    // Stripe's documented construction, computed here without the adapter's helpers.
    const independent = signLikeStripe(webhookSecret, body, nowSeconds);
    expect(independent).toBe(stripeSignatureHeader(webhookSecret, body, nowSeconds));
    expect(() => check(independent)).not.toThrow();
  });

  it('accepts any matching v1 entry (secret rotation) and ignores v0 and unknown keys', () => {
    const good = signPayload(webhookSecret, nowSeconds, body).toString('hex');
    const other = signPayload('whsec_old', nowSeconds, body).toString('hex');
    expect(() => check(`t=${nowSeconds},v1=${other},v0=${good},v1=${good},x=1`)).not.toThrow();
  });

  it('refuses a changed body, another secret, a missing or malformed header', () => {
    const header = stripeSignatureHeader(webhookSecret, body, nowSeconds);
    expectSignatureError(() => check(header, body.replace('evt_1', 'evt_2')), /matches/);
    expectSignatureError(() => check(stripeSignatureHeader('whsec_other', body, nowSeconds)), /matches/);
    expectSignatureError(() => check(undefined), /missing/);
    expectSignatureError(() => check('garbage'), /no timestamp/);
    expectSignatureError(() => check(`t=${nowSeconds}`), /no v1/);
    expectSignatureError(() => check(`t=${nowSeconds},v1=abcd`), /no v1/);
  });

  it('refuses timestamps outside the tolerance, old or future', () => {
    expectSignatureError(() => check(stripeSignatureHeader(webhookSecret, body, nowSeconds - 301)), /300 seconds/);
    expectSignatureError(() => check(stripeSignatureHeader(webhookSecret, body, nowSeconds + 301)), /300 seconds/);
    expect(() => check(stripeSignatureHeader(webhookSecret, body, nowSeconds - 299))).not.toThrow();
  });
});

describe('StripePaymentProvider against a stand-in API', () => {
  let stripe: StripeStandIn;
  let provider: StripePaymentProvider;

  beforeAll(async () => {
    stripe = await new StripeStandIn(secretKey).start();
    provider = new StripePaymentProvider({
      secretKey,
      webhookSecret,
      apiBaseUrl: `${stripe.url}/`,
      successUrl: 'https://app.example/paid?session={CHECKOUT_SESSION_ID}',
      cancelUrl: 'https://app.example/billing',
      now: () => now,
    });
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

  it('creates a Checkout Session with a form-encoded body and the secret key as Bearer', async () => {
    const checkout = await provider.createCheckout(request);
    expect(checkout.reference).toMatch(/^cs_test_/);
    expect(checkout.url).toBe(`${stripe.url}/pay/${checkout.reference}`);
    expect(checkout.instructions).toBeNull();
    expect(checkout.expiresAt?.getTime()).toBe(Math.floor(request.expiresAt.getTime() / 1000) * 1000);
    const sent = stripe.requests.at(-1)!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/checkout/sessions');
    expect(sent.headers['idempotency-key']).toBe('trellis:order-1:1');
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
    await provider.createCheckout({ ...request, expiresAt: new Date(now + 60_000) });
    expect(Number(stripe.requests.at(-1)!.form['expires_at'])).toBe(nowSeconds + 31 * 60);
    await provider.createCheckout({ ...request, expiresAt: new Date(now + 7 * 86_400_000) });
    expect(Number(stripe.requests.at(-1)!.form['expires_at'])).toBe(nowSeconds + 24 * 3600 - 60);
  });

  it("reports Stripe's error", async () => {
    stripe.failWith = { status: 402, message: 'Your account cannot currently make live charges.' };
    try {
      await expect(provider.createCheckout(request)).rejects.toThrow(/Stripe answered 402 \(api_error\): Your account cannot/);
    } finally {
      stripe.failWith = null;
    }
    const wrongKey = new StripePaymentProvider({ secretKey: 'sk_test_wrong', webhookSecret, apiBaseUrl: stripe.url, successUrl: 'https://a.example', cancelUrl: 'https://a.example' });
    await expect(wrongKey.createCheckout(request)).rejects.toThrow(/401/);
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
    const raw = Buffer.from('not json');
    await expect(provider.parseWebhook({ headers: { 'stripe-signature': stripeSignatureHeader(webhookSecret, raw, nowSeconds) }, rawBody: raw })).rejects.toThrow(/not JSON/);
  });
});
