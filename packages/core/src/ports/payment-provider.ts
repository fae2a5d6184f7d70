import type { ServiceIdentifier } from 'inversify';
import { TrellisError } from '../kernel/errors.js';

/** What Trellis asks a payment provider to collect: one order, one amount, one currency. */
export interface CheckoutRequest {
  /** Trellis order id; the provider must hand it back in every event about this payment. */
  orderId: string;
  teamId: string;
  /** Shown to the payer, e.g. "Pro plan (yearly)". */
  description: string;
  /** Amount due in the currency's minor unit (cents), after any coupon. Always > 0. */
  amount: number;
  /** Lower-case ISO 4217 code (`usd`). */
  currency: string;
  /** After this instant the order is no longer payable. */
  expiresAt: Date;
  /** Email of the user who placed the order, when known (pre-fills hosted checkout pages). */
  customerEmail?: string;
  /** Stable per checkout attempt: retrying the same attempt must not create a second payment. */
  idempotencyKey: string;
}

/** How the payer pays: a page to open, or instructions (manual payments). */
export interface Checkout {
  /** The provider's id for this checkout (Stripe Checkout Session id; the order id for manual). */
  reference: string;
  /** Hosted payment page to send the payer to, or null when there is none. */
  url: string | null;
  /** Human instructions when there is no page (manual payments), else null. */
  instructions: string | null;
  /** When the checkout itself stops accepting payment (may be earlier than the order's expiry). */
  expiresAt: Date | null;
}

/** A verified fact reported by the provider. `id` is unique per provider and delivered at least once. */
export type PaymentEvent =
  | {
      id: string;
      type: 'order.paid';
      orderId: string;
      reference: string;
      /** Amount actually collected, in minor units, when the provider says so. */
      amount: number | null;
      currency: string | null;
    }
  | { id: string; type: 'ignored'; eventType: string };

export interface WebhookDelivery {
  /** Request headers, names in lower case. */
  headers: Readonly<Record<string, string>>;
  /** The body exactly as received: signatures are computed over these bytes. */
  rawBody: Uint8Array;
}

/**
 * The PaymentProvider port: turns an order into a way to pay, and provider notifications into
 * verified payment events.
 *
 * Contract:
 * - `id` is a short lower-case name (`manual`, `stripe`); it appears in orders and in the webhook
 *   path `POST /billing/webhooks/{id}`.
 * - `createCheckout` is called after the order is stored, outside any database transaction. It
 *   may call the network; it must not mark anything paid. A failure throws (the order is then
 *   cancelled and the caller sees 502 `PAYMENT_PROVIDER_ERROR`).
 * - `parseWebhook` (providers that push events) verifies the delivery's authenticity before
 *   anything else and throws `invalidWebhookSignature(...)` (400 `INVALID_SIGNATURE`) when it
 *   fails. It returns every event in the delivery; Trellis applies each event id at most once,
 *   so providers may deliver the same event again.
 * - `manualConfirmation` is true only for providers whose orders an administrator confirms by
 *   hand (`POST /admin/orders/{id}/confirm`, `trellis billing confirm-order`).
 * - Adapters are plain classes with an options object, no container decorators; bind one with
 *   `provide(paymentProviderServiceIdentifier, new MyProvider({...}))`.
 */
export interface PaymentProvider {
  readonly id: string;
  readonly manualConfirmation: boolean;
  createCheckout(request: CheckoutRequest): Promise<Checkout>;
  parseWebhook?(delivery: WebhookDelivery): Promise<PaymentEvent[]>;
}

/**
 * Base class for payment adapters. Subclasses set a static `identifier` and may override the
 * static `validateOptions`, which the constructor of a subclass calls so a bad option fails when
 * the adapter is built, naming the option.
 */
export abstract class AbstractPaymentProvider implements PaymentProvider {
  static readonly identifier: string;
  abstract readonly manualConfirmation: boolean;

  /** Throws an Error naming the offending option. The default accepts anything. */
  static validateOptions(_options: unknown): void {}

  get id(): string {
    return (this.constructor as typeof AbstractPaymentProvider).identifier;
  }

  abstract createCheckout(request: CheckoutRequest): Promise<Checkout>;
}

/** What `parseWebhook` throws for a delivery that fails verification (400 `INVALID_SIGNATURE`). */
export function invalidWebhookSignature(message: string): TrellisError {
  return new TrellisError('bad_request', 'INVALID_SIGNATURE', message);
}

export const paymentProviderServiceIdentifier: ServiceIdentifier<PaymentProvider> = Symbol.for('@trellis/core/PaymentProvider');
