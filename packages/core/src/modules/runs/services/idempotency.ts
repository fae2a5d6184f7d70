import { createHash } from 'node:crypto';
import { canonicalJson } from '../../documents/index.js';
import { runErrors } from '../errors.js';

/** An `Idempotency-Key` with whose it is (`scope`) and the hash of the request it came with. */
export interface RunIdempotency {
  scope: string;
  key: string;
  requestHash: string;
}

/** sf-string or bare token: 1 to 255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The idempotency of a run start from its `Idempotency-Key` header (undefined without one; 400
 * `invalid_idempotency_key` for a malformed one): the key (a quoted sf-string as the IETF draft
 * writes it, or bare), the caller it belongs to, and a SHA-256 of what the request asks for
 * (`request`: endpoint, target and body fields that decide the run, keys in canonical order).
 */
export function idempotencyOf(header: string | undefined, scope: string, request: Record<string, unknown>): RunIdempotency | undefined {
  if (header === undefined) return undefined;
  let key = header.trim();
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1).replace(/\\(["\\])/g, '$1');
  if (!IDEMPOTENCY_KEY.test(key)) throw runErrors.invalidIdempotencyKey();
  return { scope, key, requestHash: createHash('sha256').update(canonicalJson(request)).digest('hex') };
}
