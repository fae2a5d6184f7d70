import { createHmac, createSecretKey, timingSafeEqual, webcrypto, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { inject, injectable } from 'inversify';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { uuidv7 } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import { configServiceIdentifier } from '../../../kernel/tokens.js';

export interface JwtClaims {
  sub: string;
  jti: string;
  exp: number;
  /** Issued at (seconds); 0 when the token carries none. */
  iat: number;
  /** RFC 8693 actor: the administrator acting as `sub`. */
  act?: { sub: string };
}

const invalid = (message: string) =>
  new TrellisError('unauthenticated', 'invalid_token', message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });

const expired = () =>
  new TrellisError('unauthenticated', 'token_expired', 'The token has expired.', {
    headers: { 'www-authenticate': 'Bearer error="invalid_token", error_description="expired"' },
  });

const base64url = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON object (not an array, not null) from base64url text, or undefined. */
function jsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(utf8.decode(Buffer.from(part, 'base64url')));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Issues user JWTs with jose (HS256) and verifies them with Node's synchronous HMAC: on every
 * uncached request, jose's verification goes through WebCrypto's asynchronous API, which costs
 * several times the HMAC itself. The checks are jose's for these options: compact form, `alg`
 * pinned to HS256, no `crit` header, a signature compared in constant time, then a JSON object
 * payload whose `iss` is ours, `iat`/`nbf`/`exp` numbers when present, `nbf` not in the future,
 * `exp` not past (an expired token is `token_expired`); and ours: `sub` and `exp` present.
 */
@injectable()
export class JwtService {
  /** Imported once: jose would otherwise import the raw secret as a key on every call. */
  private readonly key: Promise<webcrypto.CryptoKey>;
  private readonly hmacKey: KeyObject;
  private readonly issuer: string;
  readonly ttlSeconds: number;

  constructor(@inject(configServiceIdentifier) config: TrellisConfig) {
    this.hmacKey = createSecretKey(Buffer.from(config.auth.jwtSecret ?? '', 'utf8'));
    this.key = webcrypto.subtle.importKey('raw', new TextEncoder().encode(config.auth.jwtSecret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    this.issuer = config.auth.jwtIssuer;
    this.ttlSeconds = config.auth.jwtTtlSeconds;
  }

  async sign(userId: string, options: { actorId?: string; ttlSeconds?: number } = {}): Promise<{ token: string; expiresIn: number }> {
    const expiresIn = options.ttlSeconds ?? this.ttlSeconds;
    const token = await new SignJWT(options.actorId ? { act: { sub: options.actorId } } : {})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(this.issuer)
      .setJti(uuidv7())
      .setIssuedAt()
      .setExpirationTime(`${expiresIn}s`)
      .sign(await this.key);
    return { token, expiresIn };
  }

  async verify(token: string): Promise<JwtClaims> {
    return this.verifySync(token);
  }

  /** The claims of a valid token, or a 401 TrellisError (`token_expired` for an expired one). */
  verifySync(token: string): JwtClaims {
    const parts = token.split('.');
    if (parts.length !== 3 || !parts.every((part) => base64url.test(part))) throw invalid('The token is invalid.');
    const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
    const header = jsonObject(headerPart);
    if (!header || header['alg'] !== 'HS256' || header['crit'] !== undefined) throw invalid('The token is invalid.');
    const signature = Buffer.from(signaturePart, 'base64url');
    const expected = createHmac('sha256', this.hmacKey).update(`${headerPart}.${payloadPart}`).digest();
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw invalid('The token is invalid.');
    const payload = jsonObject(payloadPart);
    if (!payload || !Object.hasOwn(payload, 'iss') || payload['iss'] !== this.issuer) throw invalid('The token is invalid.');
    const now = Math.floor(Date.now() / 1000);
    for (const claim of ['iat', 'nbf', 'exp']) {
      if (payload[claim] !== undefined && typeof payload[claim] !== 'number') throw invalid('The token is invalid.');
    }
    const { nbf, exp, iat, sub, jti } = payload as { nbf?: number; exp?: number; iat?: number; sub?: unknown; jti?: unknown };
    if (nbf !== undefined && nbf > now) throw invalid('The token is invalid.');
    if (exp !== undefined && exp <= now) throw expired();
    if (typeof sub !== 'string' || typeof exp !== 'number') throw invalid('The token lacks a subject or an expiry.');
    const act = payload['act'] as { sub?: unknown } | undefined;
    return {
      sub,
      jti: typeof jti === 'string' ? jti : '',
      exp,
      iat: typeof iat === 'number' ? iat : 0,
      ...(act && typeof act === 'object' && typeof act.sub === 'string' ? { act: { sub: act.sub } } : {}),
    };
  }
}
