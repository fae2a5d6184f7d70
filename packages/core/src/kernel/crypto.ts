import { createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
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

/** Random bytes for ids, filled 256 ids at a time (one `getRandomValues` per id was a hot-path cost). */
const idRandom = new Uint8Array(16 * 256);
let idRandomAt = idRandom.length;
/** The last id's millisecond and counter: later ids of this process sort after it. */
const idClock = { msecs: -Infinity, seq: 0 };

/**
 * RFC 9562 UUID version 7 (48-bit Unix milliseconds, then a counter and randomness), laid out by
 * the `uuid` package: ids made by this process sort by creation, even within one millisecond (the
 * counter starts at a random value each millisecond and counts up within it, as `uuid` does).
 */
export function uuidv7(): string {
  if (idRandomAt === idRandom.length) {
    randomFillSync(idRandom);
    idRandomAt = 0;
  }
  const random = idRandom.subarray(idRandomAt, (idRandomAt += 16));
  const now = Date.now();
  if (now > idClock.msecs) {
    idClock.msecs = now;
    idClock.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    idClock.seq = (idClock.seq + 1) | 0;
    // The counter ran over (2^31 ids in a millisecond): the next millisecond's ids follow.
    if (idClock.seq === 0) idClock.msecs++;
  }
  return v7({ random, msecs: idClock.msecs, seq: idClock.seq });
}
