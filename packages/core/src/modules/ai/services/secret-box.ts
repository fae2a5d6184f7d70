import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { TrellisError } from '../../../kernel/errors.js';

const PREFIX = 'enc:v1:';
/** What every response shows instead of a secret. Sending it back on update keeps the stored secret. */
export const SECRET_MASK = '********';

const envelopeShape = /^enc:v1:([A-Za-z0-9_-]{1,16}):([A-Za-z0-9_-]+)$/;

export const isSealed = (value: unknown): value is string => typeof value === 'string' && envelopeShape.test(value);

export function decodeKey(text: string): Buffer {
  const key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== 32) throw new Error('An encryption key is 32 bytes in base64.');
  return key;
}

/** The development key: HKDF-SHA256 of the JWT secret, so one secret configures a test host. */
export function deriveKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret), Buffer.alloc(0), 'trellis ai conf encryption v1', 32));
}

/**
 * AES-256-GCM for secrets inside AI model conf. A sealed value is
 * `enc:v1:<keyId>:<base64url(12-byte IV | ciphertext | 16-byte tag)>`; it holds the JSON of the
 * plain value, so strings, numbers and objects round-trip. The key id names the key that opens it,
 * so keys rotate without a flag day: new values use the current key, old keys only decrypt.
 */
export class SecretBox {
  constructor(
    private readonly currentId: string,
    private readonly keys: ReadonlyMap<string, Buffer>,
  ) {
    if (!keys.has(currentId)) throw new Error(`The current encryption key ${currentId} is missing.`);
  }

  get keyId(): string {
    return this.currentId;
  }

  seal(value: unknown): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentId)!, iv);
    cipher.setAAD(Buffer.from(this.currentId));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return `${PREFIX}${this.currentId}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  open(sealed: string): unknown {
    const match = envelopeShape.exec(sealed);
    if (!match) throw new Error('not a sealed value');
    const [, keyId, payload] = match as unknown as [string, string, string];
    const key = this.keys.get(keyId);
    if (!key) {
      throw new TrellisError('internal', 'secret_key_missing', `A stored AI model secret was encrypted with key "${keyId}", which is not configured (ai.encryption.previousKeys).`);
    }
    const raw = Buffer.from(payload, 'base64url');
    if (raw.length < 29) throw new TrellisError('internal', 'secret_unreadable', 'A stored AI model secret is damaged.');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(keyId));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      const text = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
      return JSON.parse(text);
    } catch (cause) {
      throw new TrellisError('internal', 'secret_unreadable', 'A stored AI model secret cannot be decrypted with its key.', { cause });
    }
  }

  /** The id of the key a sealed value uses. */
  static keyIdOf(sealed: string): string | null {
    return envelopeShape.exec(sealed)?.[1] ?? null;
  }
}
