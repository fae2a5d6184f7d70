import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  form: Record<string, string>;
}

interface StoredResponse {
  status: number;
  body: unknown;
  /** The parameters of the first request with this idempotency key. */
  raw: string;
}

/**
 * A local stand-in for the part of Stripe's REST API the adapter uses (creating Checkout
 * Sessions), on 127.0.0.1 and an ephemeral port, speaking Stripe's documented wire format so the
 * official `stripe` SDK works against it unchanged (pointed here with its `host`, `port` and
 * `protocol` options):
 *
 * - `Authorization: Bearer <secret key>`, else 401 with an `invalid_request_error`;
 * - `application/x-www-form-urlencoded` bodies with bracketed nested keys
 *   (`line_items[0][price_data][currency]`), else 400;
 * - JSON answers, errors as `{ "error": { "type", "message", "code"?, "param"? } }`, a `Request-Id`
 *   header on every answer;
 * - `Idempotency-Key`: a repeated key with the same parameters replays the first answer (with
 *   `Idempotent-Replayed: true`), with other parameters answers 400 `idempotency_error`;
 * - `Stripe-Should-Retry` on transient failures, as Stripe sends it.
 *
 * It records every request and can be told to fail, persistently (`failWith`) or for the next
 * few requests (`failNext`).
 */
export class StripeStandIn {
  readonly requests: RecordedRequest[] = [];
  /** Answer every call with this status and a Stripe error body (an `api_error` unless `type` says). */
  failWith: { status: number; message: string; type?: string } | null = null;
  private transientFailures: Array<{ status: number; message: string }> = [];
  private readonly idempotent = new Map<string, StoredResponse>();
  private server?: Server;
  private count = 0;

  constructor(private readonly secretKey: string) {}

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** The next `times` requests fail with `status` (a transient `api_error`, retryable). */
  failNext(times: number, status = 500, message = 'An unexpected error occurred.'): void {
    for (let i = 0; i < times; i++) this.transientFailures.push({ status, message });
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const form = Object.fromEntries(new URLSearchParams(raw));
        this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, form });
        const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
          res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(7).toString('hex')}`, ...headers });
          res.end(JSON.stringify(body));
        };
        const error = (status: number, type: string, message: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
          send(status, { error: { type, message, ...extra } }, headers);
        if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
          const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
          return error(401, 'invalid_request_error', `Invalid API Key provided: ${given.slice(0, 8)}****${given.slice(-4)}`);
        }
        if (req.method === 'POST' && req.headers['content-type'] !== 'application/x-www-form-urlencoded') {
          return error(400, 'invalid_request_error', 'Invalid request: send parameters form-encoded (application/x-www-form-urlencoded).');
        }
        const transient = this.transientFailures.shift();
        if (transient) return error(transient.status, 'api_error', transient.message, {}, { 'stripe-should-retry': 'true' });
        if (this.failWith) return error(this.failWith.status, this.failWith.type ?? 'api_error', this.failWith.message);
        const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
        if (key && req.method === 'POST') {
          const stored = this.idempotent.get(key);
          if (stored && stored.raw !== raw) {
            return error(400, 'idempotency_error', `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`);
          }
          if (stored) return send(stored.status, stored.body, { 'idempotent-replayed': 'true', 'idempotency-key': key });
        }
        const remember = (status: number, body: unknown) => {
          if (key && req.method === 'POST' && status < 500) this.idempotent.set(key, { status, body, raw });
          send(status, body, key ? { 'idempotency-key': key } : {});
        };
        if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
          for (const field of ['mode', 'success_url', 'cancel_url', 'line_items[0][price_data][currency]', 'line_items[0][price_data][unit_amount]']) {
            if (!form[field]) return remember(400, { error: { type: 'invalid_request_error', message: `Missing required param: ${field}.`, param: field, code: 'parameter_missing' } });
          }
          const id = `cs_test_${++this.count}${randomBytes(4).toString('hex')}`;
          return remember(200, {
            id,
            object: 'checkout.session',
            livemode: false,
            mode: form['mode'],
            status: 'open',
            url: `${this.url}/pay/${id}`,
            success_url: form['success_url'],
            cancel_url: form['cancel_url'],
            created: Math.floor(Date.now() / 1000),
            expires_at: Number(form['expires_at']),
            amount_total: Number(form['line_items[0][price_data][unit_amount]']),
            currency: form['line_items[0][price_data][currency]'],
            customer_email: form['customer_email'] ?? null,
            client_reference_id: form['client_reference_id'] ?? null,
            metadata: { trellis_order_id: form['metadata[trellis_order_id]'], trellis_team_id: form['metadata[trellis_team_id]'] },
            payment_status: 'unpaid',
          });
        }
        error(404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${req.url}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    // The SDK keeps connections alive; close them too so the server stops at once.
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The event Stripe sends when a Checkout Session is paid. */
export function checkoutCompletedEvent(
  eventId: string,
  session: { id: string; orderId: string; amount: number; currency: string; paymentStatus?: string },
  type = 'checkout.session.completed',
) {
  return {
    id: eventId,
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    data: {
      object: {
        id: session.id,
        object: 'checkout.session',
        payment_status: session.paymentStatus ?? 'paid',
        amount_total: session.amount,
        currency: session.currency,
        client_reference_id: session.orderId,
        metadata: { trellis_order_id: session.orderId },
      },
    },
  };
}

/**
 * Signs a webhook body the way Stripe documents it, written independently of the adapter:
 * `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the endpoint secret>`.
 */
export function signLikeStripe(secret: string, body: string | Buffer, timestamp = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret);
  mac.update(`${timestamp}.`);
  mac.update(body);
  return `t=${timestamp},v1=${mac.digest('hex')}`;
}
