import { createHmac, timingSafeEqual } from 'node:crypto';
import { AbstractPaymentProvider, invalidWebhookSignature, type Checkout, type CheckoutRequest, type PaymentEvent, type WebhookDelivery } from '@trellis/core';

export interface StripePaymentProviderOptions {
  /** Secret or restricted API key (`sk_live_...`, `sk_test_...`, `rk_...`), sent as a Bearer token. */
  secretKey: string;
  /** The webhook endpoint's signing secret (`whsec_...`), from the Stripe dashboard or `stripe listen`. */
  webhookSecret: string;
  /** Where Checkout sends the payer after paying. May contain `{CHECKOUT_SESSION_ID}`. */
  successUrl: string;
  /** Where Checkout sends the payer who gives up. */
  cancelUrl: string;
  /** Stripe's API origin (default `https://api.stripe.com`); point it at a stand-in in tests. */
  apiBaseUrl?: string;
  /** `Stripe-Version` header; omitted by default (the account's version applies). */
  apiVersion?: string;
  /** Oldest accepted webhook signature, in seconds (default 300, Stripe's own default). */
  webhookToleranceSeconds?: number;
  /** Timeout of one API call (default 10 000 ms). */
  timeoutMs?: number;
  /** Clock for signature timestamps and session expiry (default `Date.now`). */
  now?: () => number;
  /** `fetch` to use (default the global one). */
  fetch?: typeof fetch;
}

const MIN_SESSION_SECONDS = 30 * 60 + 60; // Stripe wants at least 30 minutes; keep a minute of slack
const MAX_SESSION_SECONDS = 24 * 3600 - 60; // and at most 24 hours

/**
 * PaymentProvider for Stripe: each order becomes a Checkout Session (mode `payment`) created over
 * Stripe's REST API with `fetch`, and `checkout.session.completed` /
 * `checkout.session.async_payment_succeeded` webhooks mark it paid. Webhook deliveries are
 * verified against the `Stripe-Signature` header (HMAC-SHA256 of `${t}.${rawBody}` with the
 * endpoint secret, compared in constant time, timestamp within the tolerance).
 *
 *   createHost({ adapters: [provide(paymentProviderServiceIdentifier, new StripePaymentProvider({...}))] })
 *
 * Point the Stripe webhook endpoint at `{publicUrl}/billing/webhooks/stripe`.
 */
export class StripePaymentProvider extends AbstractPaymentProvider {
  static override readonly identifier = 'stripe';
  readonly manualConfirmation = false;
  private readonly options: Required<Omit<StripePaymentProviderOptions, 'apiVersion'>> & { apiVersion?: string };

  constructor(options: StripePaymentProviderOptions) {
    super();
    StripePaymentProvider.validateOptions(options);
    this.options = {
      apiBaseUrl: 'https://api.stripe.com',
      webhookToleranceSeconds: 300,
      timeoutMs: 10_000,
      now: Date.now,
      fetch: globalThis.fetch,
      ...options,
    };
    this.options.apiBaseUrl = this.options.apiBaseUrl.replace(/\/+$/, '');
  }

  /** Throws an Error naming the first bad option. */
  static override validateOptions(options: unknown): void {
    const o = (options ?? {}) as Partial<StripePaymentProviderOptions>;
    const fail = (name: string, rule: string) => {
      throw new Error(`StripePaymentProvider: option ${name} ${rule}.`);
    };
    if (typeof o.secretKey !== 'string' || !/^(sk|rk)_[A-Za-z0-9_]+$/.test(o.secretKey)) fail('secretKey', 'must be a Stripe secret or restricted key (sk_... or rk_...)');
    if (typeof o.webhookSecret !== 'string' || !/^whsec_\S+$/.test(o.webhookSecret)) fail('webhookSecret', 'must be a webhook signing secret (whsec_...)');
    for (const name of ['successUrl', 'cancelUrl', 'apiBaseUrl'] as const) {
      const value = o[name];
      if (value === undefined && name === 'apiBaseUrl') continue;
      if (typeof value !== 'string' || !isHttpUrl(value)) fail(name, 'must be an absolute http(s) URL');
    }
    if (o.webhookToleranceSeconds !== undefined && !(Number.isInteger(o.webhookToleranceSeconds) && o.webhookToleranceSeconds > 0)) {
      fail('webhookToleranceSeconds', 'must be a positive integer');
    }
    if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && o.timeoutMs > 0)) fail('timeoutMs', 'must be a positive integer');
  }

  async createCheckout(request: CheckoutRequest): Promise<Checkout> {
    const nowSeconds = Math.floor(this.options.now() / 1000);
    const wanted = Math.floor(request.expiresAt.getTime() / 1000);
    const expiresAt = Math.min(Math.max(wanted, nowSeconds + MIN_SESSION_SECONDS), nowSeconds + MAX_SESSION_SECONDS);
    const form: Record<string, string | number> = {
      mode: 'payment',
      'line_items[0][quantity]': 1,
      'line_items[0][price_data][currency]': request.currency,
      'line_items[0][price_data][unit_amount]': request.amount,
      'line_items[0][price_data][product_data][name]': request.description,
      success_url: this.options.successUrl,
      cancel_url: this.options.cancelUrl,
      client_reference_id: request.orderId,
      'metadata[trellis_order_id]': request.orderId,
      'metadata[trellis_team_id]': request.teamId,
      'payment_intent_data[metadata][trellis_order_id]': request.orderId,
      expires_at: expiresAt,
    };
    if (request.customerEmail) form['customer_email'] = request.customerEmail;
    const session = await this.call<{ id?: string; url?: string | null; expires_at?: number }>('POST', '/v1/checkout/sessions', form, request.idempotencyKey);
    if (typeof session.id !== 'string') throw new Error('Stripe answered a Checkout Session without an id.');
    return {
      reference: session.id,
      url: typeof session.url === 'string' ? session.url : null,
      instructions: null,
      expiresAt: new Date((typeof session.expires_at === 'number' ? session.expires_at : expiresAt) * 1000),
    };
  }

  async parseWebhook(delivery: WebhookDelivery): Promise<PaymentEvent[]> {
    verifyStripeSignature({
      header: delivery.headers['stripe-signature'],
      rawBody: delivery.rawBody,
      secret: this.options.webhookSecret,
      toleranceSeconds: this.options.webhookToleranceSeconds,
      nowSeconds: Math.floor(this.options.now() / 1000),
    });
    let event: StripeEvent;
    try {
      event = JSON.parse(Buffer.from(delivery.rawBody).toString('utf8')) as StripeEvent;
    } catch {
      throw invalidWebhookSignature('The signed body is not JSON.');
    }
    if (typeof event?.id !== 'string' || typeof event.type !== 'string') throw invalidWebhookSignature('The signed body is not a Stripe event.');
    return [toPaymentEvent(event)];
  }

  private async call<T>(method: 'POST' | 'GET', path: string, form: Record<string, string | number>, idempotencyKey?: string): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.secretKey}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (idempotencyKey) headers['idempotency-key'] = `trellis:${idempotencyKey}`;
    if (this.options.apiVersion) headers['stripe-version'] = this.options.apiVersion;
    const body = new URLSearchParams(Object.entries(form).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const response = await this.options.fetch(`${this.options.apiBaseUrl}${path}`, { method, headers, body, signal: AbortSignal.timeout(this.options.timeoutMs) });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`Stripe answered ${response.status} with a body that is not JSON.`);
    }
    if (!response.ok) {
      const error = (parsed as { error?: { message?: string; type?: string } }).error;
      throw new Error(`Stripe answered ${response.status}${error?.type ? ` (${error.type})` : ''}: ${error?.message ?? 'no message'}`);
    }
    return parsed as T;
  }
}

interface StripeSession {
  id?: string;
  payment_status?: string;
  amount_total?: number | null;
  currency?: string | null;
  client_reference_id?: string | null;
  metadata?: Record<string, string> | null;
}

interface StripeEvent {
  id: string;
  type: string;
  data?: { object?: StripeSession };
}

/** A Stripe event as a Trellis payment event: paid Checkout Sessions count, everything else is ignored. */
function toPaymentEvent(event: StripeEvent): PaymentEvent {
  const session = event.data?.object;
  const paid =
    (event.type === 'checkout.session.completed' && session?.payment_status === 'paid') || event.type === 'checkout.session.async_payment_succeeded';
  const orderId = session?.metadata?.['trellis_order_id'] ?? session?.client_reference_id ?? null;
  if (!paid || !session || typeof session.id !== 'string' || !orderId) return { id: event.id, type: 'ignored', eventType: event.type };
  return {
    id: event.id,
    type: 'order.paid',
    orderId,
    reference: session.id,
    amount: typeof session.amount_total === 'number' ? session.amount_total : null,
    currency: typeof session.currency === 'string' ? session.currency : null,
  };
}

export interface SignatureCheck {
  /** The `Stripe-Signature` header: `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`. */
  header: string | undefined;
  rawBody: Uint8Array;
  secret: string;
  toleranceSeconds: number;
  nowSeconds: number;
}

/**
 * Stripe's webhook signature scheme: HMAC-SHA256 over `${t}.${rawBody}` keyed with the endpoint
 * secret, hex-encoded, in one or more `v1` entries (several during secret rotation). Throws
 * 400 `INVALID_SIGNATURE` when the header is missing or malformed, no `v1` matches (constant-time
 * comparison), or `t` is further than the tolerance from now.
 */
export function verifyStripeSignature(check: SignatureCheck): void {
  if (!check.header) throw invalidWebhookSignature('The Stripe-Signature header is missing.');
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of check.header.split(',')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d+$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
  }
  if (timestamp === undefined || signatures.length === 0) throw invalidWebhookSignature('The Stripe-Signature header has no timestamp or no v1 signature.');
  const expected = signPayload(check.secret, timestamp, check.rawBody);
  const matches = signatures.some((candidate) => timingSafeEqual(Buffer.from(candidate, 'hex'), expected));
  if (!matches) throw invalidWebhookSignature('No signature in the Stripe-Signature header matches the body.');
  if (Math.abs(check.nowSeconds - timestamp) > check.toleranceSeconds) {
    throw invalidWebhookSignature(`The signature timestamp is more than ${check.toleranceSeconds} seconds from now (a replay, or a skewed clock).`);
  }
}

/** The `v1` signature bytes of a payload (also how tests and tools sign deliveries). */
export function signPayload(secret: string, timestamp: number, rawBody: Uint8Array | string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody).digest();
}

/** A complete `Stripe-Signature` header for a payload, as Stripe sends it. */
export function stripeSignatureHeader(secret: string, rawBody: Uint8Array | string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${signPayload(secret, timestamp, rawBody).toString('hex')}`;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value.replace('{CHECKOUT_SESSION_ID}', 'x'));
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
