import { createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

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

const pool = Buffer.alloc(16 * 256);
let poolOffset = pool.length;
let lastMs = 0;
let sequence = 0;

/**
 * RFC 9562 UUID version 7: 48-bit Unix milliseconds, then randomness, with a 12-bit counter in
 * `rand_a` so ids generated within one millisecond by this process stay ordered.
 */
export function uuidv7(now: number = Date.now()): string {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + 16);
  poolOffset += 16;
  if (now <= lastMs) {
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) lastMs += 1;
    now = lastMs;
  } else {
    lastMs = now;
    sequence = bytes[6]! & 0x07; // start low so the counter has room
  }
  const b = Buffer.from(bytes);
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | ((sequence >> 8) & 0x0f);
  b[7] = sequence & 0xff;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
