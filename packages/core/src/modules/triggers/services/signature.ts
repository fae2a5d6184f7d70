import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The `webhook-signature` header value of a message: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signWebhook(secret: string, messageId: string, timestamp: Date, body: string): string {
  return new Webhook(secret).sign(messageId, timestamp, body);
}

/** The three Standard Webhooks headers of a message sent now. */
export function webhookHeaders(secret: string, messageId: string, body: string, now: Date): Record<string, string> {
  const seconds = new Date(Math.floor(now.getTime() / 1000) * 1000);
  return { 'webhook-id': messageId, 'webhook-timestamp': String(seconds.getTime() / 1000), 'webhook-signature': signWebhook(secret, messageId, seconds, body) };
}

export type VerifyOutcome = 'ok' | 'missing' | 'timestamp' | 'signature';

/**
 * Checks a Standard Webhooks delivery: the three headers are there, the timestamp is within
 * `toleranceSeconds` of `nowMs` either way, and one of the space-separated `v1,` signatures is
 * the HMAC of `id.timestamp.body` (compared in constant time). Other versions are ignored.
 */
export function verifyWebhook(secret: string, headers: Readonly<Record<string, string | undefined>>, body: Uint8Array | string, nowMs: number, toleranceSeconds: number): VerifyOutcome {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) return 'missing';
  if (!/^\d{1,12}$/.test(timestamp.trim())) return 'timestamp';
  const seconds = Number(timestamp.trim());
  if (Math.abs(nowMs / 1000 - seconds) > toleranceSeconds) return 'timestamp';
  const bytes = typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const expected = Buffer.from(new Webhook(secret).sign(id, new Date(seconds * 1000), bytes).slice(3), 'base64');
  for (const part of signatures.split(' ')) {
    const [version, value] = part.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return 'ok';
  }
  return 'signature';
}
