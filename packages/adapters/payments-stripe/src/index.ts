import { AbstractPaymentProvider, invalidWebhookSignature, type Checkout, type CheckoutRequest, type PaymentEvent, type WebhookDelivery } from '@trellis/core';
import Stripe from 'stripe';

/**
 * The Stripe API version every request names (`Stripe-Version`), pinned so that a change of
 * the account's default version in the dashboard cannot change what the adapter receives. It is
 * the version the installed `stripe` SDK major is typed for; move both together.
 */
export const STRIPE_API_VERSION = '2026-10-28.endive';

export interface StripePaymentProviderOptions {
  /** Secret or restricted API key (`sk_live_...`, `sk_test_...`, `rk_...`). */
  secretKey: string;
  /** The webhook endpoint's signing secret (`whsec_...`), from the Stripe dashboard or `stripe listen`. */
  webhookSecret: string;
  /** Where Checkout sends the payer after paying. May contain `{CHECKOUT_SESSION_ID}`. */
  successUrl: string;
  /** Where Checkout sends the payer who gives up. */
  cancelUrl: string;
  /** Stripe's API origin (default `https://api.stripe.com`); point it at a stand-in in tests. */
  apiBaseUrl?: string;
  /** `Stripe-Version` of every request (default `STRIPE_API_VERSION`). */
  apiVersion?: string;
  /** Oldest accepted webhook signature, in seconds (default 300, Stripe's own default). */
  webhookToleranceSeconds?: number;
  /** Timeout of one API call (default 10 000 ms). */
  timeoutMs?: number;
  /**
   * How many times the SDK retries a call that failed on the network, with 409, or with a 5xx
   * (default 2), with backoff and the same idempotency key, so a retry never pays twice.
   */
  maxNetworkRetries?: number;
  /** Clock for signature timestamps and session expiry (default `Date.now`). */
  now?: () => number;
}

const MIN_SESSION_SECONDS = 30 * 60 + 60; // Stripe wants at least 30 minutes; keep a minute of slack
const MAX_SESSION_SECONDS = 24 * 3600 - 60; // and at most 24 hours

/**
 * PaymentProvider for Stripe on the official `stripe` SDK: each order becomes a Checkout Session
 * (mode `payment`) created through `checkout.sessions.create`, and `checkout.session.completed` /
 * `checkout.session.async_payment_succeeded` webhooks mark it paid. Webhook deliveries are
 * verified with `webhooks.constructEvent` against the `Stripe-Signature` header.
 *
 *   createHost({ adapters: [provide(paymentProviderServiceIdentifier, new StripePaymentProvider({...}))] })
 *
 * Point the Stripe webhook endpoint at `{publicUrl}/billing/webhooks/stripe`.
 */
export class StripePaymentProvider extends AbstractPaymentProvider {
  static override readonly identifier = 'stripe';
  readonly manualConfirmation = false;
  private readonly stripe: Stripe;
  private readonly options: Required<Omit<StripePaymentProviderOptions, 'apiBaseUrl' | 'apiVersion' | 'maxNetworkRetries' | 'timeoutMs'>>;

  constructor(options: StripePaymentProviderOptions) {
    super();
    StripePaymentProvider.validateOptions(options);
    this.options = { webhookToleranceSeconds: 300, now: Date.now, ...options };
    const api = new URL(options.apiBaseUrl ?? 'https://api.stripe.com');
    this.stripe = new Stripe(options.secretKey, {
      apiVersion: (options.apiVersion ?? STRIPE_API_VERSION) as Stripe.LatestApiVersion,
      maxNetworkRetries: options.maxNetworkRetries ?? 2,
      timeout: options.timeoutMs ?? 10_000,
      host: api.hostname,
      port: api.port || (api.protocol === 'http:' ? 80 : 443),
      protocol: api.protocol === 'http:' ? 'http' : 'https',
      appInfo: { name: 'Trellis' },
    });
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
    if (o.apiBaseUrl !== undefined && new URL(o.apiBaseUrl).pathname.replace(/\/+$/, '') !== '') fail('apiBaseUrl', 'must be an origin without a path');
    if (o.webhookToleranceSeconds !== undefined && !(Number.isInteger(o.webhookToleranceSeconds) && o.webhookToleranceSeconds > 0)) {
      fail('webhookToleranceSeconds', 'must be a positive integer');
    }
    if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && o.timeoutMs > 0)) fail('timeoutMs', 'must be a positive integer');
    if (o.maxNetworkRetries !== undefined && !(Number.isInteger(o.maxNetworkRetries) && o.maxNetworkRetries >= 0)) fail('maxNetworkRetries', 'must be an integer of 0 or more');
  }

  async createCheckout(request: CheckoutRequest): Promise<Checkout> {
    const nowSeconds = Math.floor(this.options.now() / 1000);
    const wanted = Math.floor(request.expiresAt.getTime() / 1000);
    const expiresAt = Math.min(Math.max(wanted, nowSeconds + MIN_SESSION_SECONDS), nowSeconds + MAX_SESSION_SECONDS);
    const params: Stripe.Checkout.SessionCreateParams = {
      mode: 'payment',
      line_items: [{ quantity: 1, price_data: { currency: request.currency, unit_amount: request.amount, product_data: { name: request.description } } }],
      success_url: this.options.successUrl,
      cancel_url: this.options.cancelUrl,
      client_reference_id: request.orderId,
      metadata: { trellis_order_id: request.orderId, trellis_team_id: request.teamId },
      payment_intent_data: { metadata: { trellis_order_id: request.orderId } },
      expires_at: expiresAt,
    };
    if (request.customerEmail) params.customer_email = request.customerEmail;
    let session: Stripe.Checkout.Session;
    try {
      session = await this.stripe.checkout.sessions.create(params, { idempotencyKey: `trellis:${request.idempotencyKey}` });
    } catch (error) {
      throw describeStripeError(error);
    }
    if (typeof session.id !== 'string') throw new Error('Stripe answered a Checkout Session without an id.');
    return {
      reference: session.id,
      url: typeof session.url === 'string' ? session.url : null,
      instructions: null,
      expiresAt: new Date((typeof session.expires_at === 'number' ? session.expires_at : expiresAt) * 1000),
    };
  }

  async parseWebhook(delivery: WebhookDelivery): Promise<PaymentEvent[]> {
    const header = delivery.headers['stripe-signature'];
    if (!header) throw invalidWebhookSignature('The Stripe-Signature header is missing.');
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(
        Buffer.from(delivery.rawBody),
        header,
        this.options.webhookSecret,
        this.options.webhookToleranceSeconds,
        undefined,
        this.options.now(),
      );
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) throw invalidWebhookSignature(signatureMessage(error.message, this.options.webhookToleranceSeconds));
      // The signature held; the signed body is not JSON.
      if (error instanceof SyntaxError) throw invalidWebhookSignature('The signed body is not JSON.');
      throw error;
    }
    if (typeof event?.id !== 'string' || typeof event.type !== 'string') throw invalidWebhookSignature('The signed body is not a Stripe event.');
    return [toPaymentEvent(event)];
  }
}

/** The SDK's verification failure in the words docs/errors.md uses. */
function signatureMessage(sdkMessage: string, toleranceSeconds: number): string {
  if (sdkMessage.startsWith('Unable to extract timestamp') || sdkMessage.startsWith('No signatures found with expected scheme')) {
    return 'The Stripe-Signature header has no timestamp or no v1 signature.';
  }
  if (sdkMessage.startsWith('No signatures found matching')) return 'No signature in the Stripe-Signature header matches the body.';
  if (sdkMessage.startsWith('Timestamp outside the tolerance zone')) {
    return `The signature timestamp is more than ${toleranceSeconds} seconds old (a replay, or a skewed clock).`;
  }
  return `The Stripe-Signature header does not verify: ${sdkMessage.split('\n')[0]}`;
}

/** An SDK error as one line: `Stripe answered 402 (card_error): ...`, or the network failure. */
function describeStripeError(error: unknown): Error {
  if (error instanceof Stripe.errors.StripeError) {
    const raw = (error.raw ?? {}) as { type?: string };
    if (error.statusCode) return new Error(`Stripe answered ${error.statusCode}${raw.type ? ` (${raw.type})` : ''}: ${error.message || 'no message'}`, { cause: error });
    return new Error(`Stripe could not be reached: ${error.message}`, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** A Stripe event as a Trellis payment event: paid Checkout Sessions count, everything else is ignored. */
function toPaymentEvent(event: Stripe.Event): PaymentEvent {
  const isSessionEvent = event.type === 'checkout.session.completed' || event.type === 'checkout.session.async_payment_succeeded';
  const session = isSessionEvent ? (event.data?.object as Partial<Stripe.Checkout.Session> | undefined) : undefined;
  const paid = (event.type === 'checkout.session.completed' && session?.payment_status === 'paid') || event.type === 'checkout.session.async_payment_succeeded';
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value.replace('{CHECKOUT_SESSION_ID}', 'x'));
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
