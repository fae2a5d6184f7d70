import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  form: Record<string, string>;
}

/**
 * A local stand-in for the part of Stripe's REST API the adapter uses (creating Checkout
 * Sessions), on 127.0.0.1 and an ephemeral port. It checks what Stripe checks (Bearer key,
 * form encoding), records every request, and can be told to fail.
 */
export class StripeStandIn {
  readonly requests: RecordedRequest[] = [];
  /** Answer the next calls with this status and a Stripe error body. */
  failWith: { status: number; message: string } | null = null;
  private server?: Server;
  private count = 0;

  constructor(private readonly secretKey: string) {}

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const form = Object.fromEntries(new URLSearchParams(raw));
        this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, form });
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
          return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } });
        }
        if (req.headers['content-type'] !== 'application/x-www-form-urlencoded') {
          return send(400, { error: { type: 'invalid_request_error', message: 'Send a form-encoded body.' } });
        }
        if (this.failWith) return send(this.failWith.status, { error: { type: 'api_error', message: this.failWith.message } });
        if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
          for (const field of ['mode', 'success_url', 'cancel_url', 'line_items[0][price_data][currency]', 'line_items[0][price_data][unit_amount]']) {
            if (!form[field]) return send(400, { error: { type: 'invalid_request_error', message: `Missing required param: ${field}.` } });
          }
          const id = `cs_test_${++this.count}${Math.random().toString(36).slice(2, 10)}`;
          return send(200, {
            id,
            object: 'checkout.session',
            mode: form['mode'],
            url: `${this.url}/pay/${id}`,
            expires_at: Number(form['expires_at']),
            amount_total: Number(form['line_items[0][price_data][unit_amount]']),
            currency: form['line_items[0][price_data][currency]'],
            client_reference_id: form['client_reference_id'] ?? null,
            metadata: { trellis_order_id: form['metadata[trellis_order_id]'], trellis_team_id: form['metadata[trellis_team_id]'] },
            payment_status: 'unpaid',
          });
        }
        send(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${req.url}).` } });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
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
