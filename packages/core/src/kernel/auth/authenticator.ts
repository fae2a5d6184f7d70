import type { ServiceIdentifier } from 'inversify';
import { TrellisError } from '../errors.js';
import type { CredentialKind, Principal } from './principal.js';

export interface CredentialMeta {
  ip: string;
  userAgent: string;
}

/**
 * Verifies one kind of credential. Modules contribute verifiers (identity: JWT, API key, agent
 * token; oauth: access tokens); the combined authenticator picks the one whose `accepts` matches
 * the token's shape.
 */
export interface CredentialVerifier {
  readonly kind: CredentialKind;
  accepts(token: string): boolean;
  /** Resolves the principal or throws a 401 TrellisError. `expiresAt` bounds how long it may be cached. */
  verify(token: string, meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs?: number }>;
}

export const credentialVerifierServiceIdentifier: ServiceIdentifier<CredentialVerifier> = Symbol.for('@trellis/core/CredentialVerifier');

interface CacheEntry {
  principal: Principal;
  expiresAtMs: number;
}

/**
 * The combined authenticator: one entry point for every credential kind, with a small in-process
 * cache of verified credentials so a hot path does not verify and load the user on every request.
 * Anything that changes a user or revokes a credential through Trellis calls `invalidate*`.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly byUser = new Map<string, Set<string>>();
  private readonly pending = new Map<string, Promise<Principal>>();
  private generation = 0;

  private verifiers?: readonly CredentialVerifier[];

  /**
   * `loadVerifiers` runs on first use, so verifiers may depend on services that themselves use
   * the authenticator (to invalidate its cache) without a construction cycle.
   */
  constructor(
    private readonly loadVerifiers: () => readonly CredentialVerifier[],
    private readonly cacheTtlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  async authenticate(token: string, meta: CredentialMeta): Promise<Principal> {
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.expiresAtMs > Date.now()) return cached.principal;
      this.forget(token, cached.principal.userId);
    }
    if (this.cacheTtlMs <= 0) return (await this.verify(token, meta)).principal;
    // Requests in flight with the same credential share one verification: when a busy token's
    // entry expires, the requests that arrive meanwhile do not each verify it and load its user.
    const shared = this.pending.get(token);
    if (shared) return shared;
    const generation = this.generation;
    const verification: Promise<Principal> = this.verify(token, meta)
      .then(({ principal, expiresAtMs }) => {
        // An invalidation while it ran may concern this credential: use the result, do not keep it.
        if (generation === this.generation) this.remember(token, principal, Math.min(Date.now() + this.cacheTtlMs, expiresAtMs ?? Infinity));
        return principal;
      })
      .finally(() => {
        if (this.pending.get(token) === verification) this.pending.delete(token);
      });
    this.pending.set(token, verification);
    return verification;
  }

  private verify(token: string, meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs?: number }> {
    const verifier = (this.verifiers ??= this.loadVerifiers()).find((v) => v.accepts(token));
    if (!verifier) {
      return Promise.reject(
        new TrellisError('unauthenticated', 'invalid_token', 'The bearer token is not a credential this server issues.', {
          headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
        }),
      );
    }
    return verifier.verify(token, meta).then((verified) => {
      if (verified.expiresAtMs !== undefined && verified.principal.expiresAtMs === undefined) verified.principal.expiresAtMs = verified.expiresAtMs;
      return verified;
    });
  }

  /** Verifications started before an invalidation are not cached, and are not shared any more. */
  private invalidated(): void {
    this.generation++;
    this.pending.clear();
  }

  /**
   * Drops every cached credential of a user (after an update, a disable or a revocation), and the
   * `become` tokens the user holds as an administrator (their principal names the user as actor).
   */
  invalidateUser(userId: string): void {
    this.invalidated();
    const tokens = this.byUser.get(userId);
    if (tokens) {
      for (const token of tokens) this.cache.delete(token);
      this.byUser.delete(userId);
    }
    for (const [token, entry] of this.cache) if (entry.principal.actorId === userId) this.forget(token, entry.principal.userId);
  }

  /** Drops one cached credential. */
  invalidateToken(token: string): void {
    this.invalidated();
    const entry = this.cache.get(token);
    if (entry) this.forget(token, entry.principal.userId);
  }

  /** Drops cached credentials matching a predicate (for example all tokens of one OAuth client). */
  invalidateWhere(predicate: (principal: Principal) => boolean): void {
    this.invalidated();
    for (const [token, entry] of this.cache) if (predicate(entry.principal)) this.forget(token, entry.principal.userId);
  }

  clear(): void {
    this.invalidated();
    this.cache.clear();
    this.byUser.clear();
  }

  private remember(token: string, principal: Principal, expiresAtMs: number): void {
    if (this.cache.size >= this.maxEntries) {
      // Map iteration order is insertion order: drop the oldest entry.
      const oldest = this.cache.keys().next().value as string;
      this.forget(oldest, this.cache.get(oldest)!.principal.userId);
    }
    this.cache.set(token, { principal, expiresAtMs });
    let tokens = this.byUser.get(principal.userId);
    if (!tokens) this.byUser.set(principal.userId, (tokens = new Set()));
    tokens.add(token);
  }

  private forget(token: string, userId: string): void {
    this.cache.delete(token);
    const tokens = this.byUser.get(userId);
    if (tokens) {
      tokens.delete(token);
      if (tokens.size === 0) this.byUser.delete(userId);
    }
  }
}

/** The bearer token of a request: `Authorization: Bearer <token>`, or an API key in `X-API-Key`. */
export function extractBearer(headers: Record<string, string>): string | null {
  const authorization = headers['authorization'];
  if (authorization !== undefined) {
    const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(authorization);
    if (!match) {
      throw new TrellisError('unauthenticated', 'invalid_authorization_header', 'The Authorization header must be "Bearer <token>".', {
        headers: { 'www-authenticate': 'Bearer error="invalid_request"' },
      });
    }
    return match[1]!;
  }
  const apiKey = headers['x-api-key'];
  return apiKey ? apiKey.trim() : null;
}
