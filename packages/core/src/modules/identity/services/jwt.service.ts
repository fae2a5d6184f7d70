import { webcrypto } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
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

/** Issues and verifies user JWTs (HS256). */
@injectable()
export class JwtService {
  /** Imported once: jose would otherwise import the raw secret as a key on every call. */
  private readonly key: Promise<webcrypto.CryptoKey>;
  private readonly issuer: string;
  readonly ttlSeconds: number;

  constructor(@inject(configServiceIdentifier) config: TrellisConfig) {
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
    try {
      const { payload } = await jwtVerify(token, await this.key, { issuer: this.issuer, algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number') throw invalid('The token lacks a subject or an expiry.');
      const act = payload['act'] as { sub?: unknown } | undefined;
      return {
        sub: payload.sub,
        jti: typeof payload.jti === 'string' ? payload.jti : '',
        exp: payload.exp,
        iat: typeof payload.iat === 'number' ? payload.iat : 0,
        ...(act && typeof act.sub === 'string' ? { act: { sub: act.sub } } : {}),
      };
    } catch (error) {
      if (error instanceof TrellisError) throw error;
      if (error instanceof joseErrors.JWTExpired) {
        throw new TrellisError('unauthenticated', 'token_expired', 'The token has expired.', {
          headers: { 'www-authenticate': 'Bearer error="invalid_token", error_description="expired"' },
        });
      }
      throw invalid('The token is invalid.');
    }
  }
}
