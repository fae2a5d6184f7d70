import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { v7 } from 'uuid';

/** SHA-256 hex digest: how every opaque token is stored. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** A prefixed opaque token with 256 bits of randomness: `trk_<43 base64url chars>`. */
export function generateOpaqueToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

export function randomSecret(bytes = 48): string {
  return randomBytes(bytes).toString('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Whether `value` has the shape of a UUID (any version): ids that do not cannot name a row, and
 * PostgreSQL refuses them with an error rather than finding nothing, so lookups check first.
 */
export const isUuid = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);

/**
 * RFC 9562 UUID version 7 (48-bit Unix milliseconds, then a counter and randomness), from the
 * `uuid` package: ids made by this process sort by creation, even within one millisecond.
 */
export function uuidv7(): string {
  return v7();
}
