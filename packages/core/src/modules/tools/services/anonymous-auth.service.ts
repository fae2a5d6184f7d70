import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import { generateOpaqueToken, sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import { authenticatorServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { passwordHasherServiceIdentifier, type PasswordHasher } from '../../../ports/password-hasher.js';
import { User, UserService } from '../../identity/index.js';
import { InvalidGrant } from '../../oauth/index.js';
import { toolsConfigServiceIdentifier, type ToolsConfig } from '../config.js';
import { AnonymousAccount } from '../entities/anonymous-account.entity.js';
import { AnonymousToken } from '../entities/anonymous-token.entity.js';
import { inTransaction } from '../../../kernel/transaction.js';
import type { AnonymousTokenResponse } from '../schemas.js';

export type { AnonymousTokenResponse };

/** Prefix of anonymous access and refresh tokens (ARCHITECTURE: `tan_`). */
export const ANONYMOUS_TOKEN_PREFIX = 'tan_';

const invalidCredentials = () => new TrellisError('unauthenticated', 'invalid_credentials', 'The anonymous identifier or password is wrong.');

/**
 * Anonymous sign-in of the tool service and its refresh-token rotation. An identifier seen for the
 * first time creates a password-less Trellis user (with a personal team) and an anonymous account
 * holding the Argon2id digest of `passwd`; later sign-ins check the password. Tokens are opaque
 * (`tan_`), stored as SHA-256 digests; access tokens live `anonymous.accessTokenTtlSeconds` (1 h),
 * refresh tokens `anonymous.refreshTokenTtlSeconds` (30 d) and are single use: each rotation issues
 * a new pair in the same family, and presenting a rotated refresh token again revokes the family.
 */
@injectable()
export class AnonymousAuthService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(passwordHasherServiceIdentifier) private readonly hasher: PasswordHasher,
    @inject(UserService) private readonly users: UserService,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(toolsConfigServiceIdentifier) private readonly config: ToolsConfig,
  ) {}

  async signIn(em: EntityManager, identifier: string, password: string): Promise<AnonymousTokenResponse> {
    let account = await em.findOne(AnonymousAccount, { identifier }, { populate: ['user'] });
    if (!account) account = await this.createAccount(em, identifier, password);
    else if (!(await this.hasher.verify(account.passwordHash, password))) throw invalidCredentials();
    if (account.upgradedAt) {
      throw new TrellisError('forbidden', 'anonymous_account_upgraded', 'This anonymous account was upgraded to a registered one: sign in with its email and password (POST /auth/login).');
    }
    if (account.user.status !== 'active') throw new TrellisError('forbidden', 'account_disabled', 'This account is disabled.');
    return inTransaction(em, (tx) => this.issue(tx, account, this.ids.next()));
  }

  /**
   * Rotates a refresh token. `oldAccessToken` (the request's bearer, optional) must be an access
   * token of the same family; it is revoked with the rotation.
   */
  async rotate(em: EntityManager, refreshToken: string, oldAccessToken: string | null): Promise<AnonymousTokenResponse> {
    const now = this.clock.now();
    const row = await em.findOne(AnonymousToken, { tokenHash: sha256Hex(refreshToken), kind: 'refresh' }, { populate: ['account', 'account.user'] });
    if (!row || row.revokedAt || row.expiresAt <= now) throw new InvalidGrant('The refresh token is unknown, expired or revoked.');
    if (row.usedAt) {
      await this.revokeFamily(em, row.family);
      throw new InvalidGrant('The refresh token was already used: every token of this sign-in is revoked. Sign in again.');
    }
    if (row.account.upgradedAt) throw new TrellisError('forbidden', 'anonymous_account_upgraded', 'This anonymous account was upgraded; sign in with its email and password.');
    if (row.account.user.status !== 'active') throw new TrellisError('forbidden', 'account_disabled', 'This account is disabled.');
    let oldAccess: AnonymousToken | null = null;
    if (oldAccessToken !== null) {
      oldAccess = await em.findOne(AnonymousToken, { tokenHash: sha256Hex(oldAccessToken), kind: 'access' });
      if (!oldAccess || oldAccess.family !== row.family) {
        throw new TrellisError('forbidden', 'access_token_mismatch', 'The bearer access token does not belong to this refresh token.');
      }
    }
    const issued = await inTransaction(em, async (tx) => {
      // Single use: only one request can move used_at from null, on SQLite and PostgreSQL alike.
      const claimed = await tx.nativeUpdate(AnonymousToken, { id: row.id, usedAt: null }, { usedAt: now });
      if (claimed === 0) return null;
      if (oldAccess) await tx.nativeUpdate(AnonymousToken, { id: oldAccess.id, revokedAt: null }, { revokedAt: now });
      return this.issue(tx, row.account, row.family);
    });
    if (!issued) {
      await this.revokeFamily(em, row.family);
      throw new InvalidGrant('The refresh token was already used: every token of this sign-in is revoked. Sign in again.');
    }
    if (oldAccess) this.authenticator.invalidateWhere((principal) => principal.kind === 'anonymous' && principal.credentialId === oldAccess.id);
    return issued;
  }

  /**
   * Turns the anonymous user into a registered one: the same user (so every collection, record and
   * conversation stays theirs) gets an email and a password, and anonymous sign-in ends for the
   * identifier: its tokens are revoked.
   */
  async upgrade(em: EntityManager, userId: string, email: string, password: string, name?: string): Promise<User> {
    const account = await em.findOne(AnonymousAccount, { user: userId });
    if (!account || account.upgradedAt) throw new TrellisError('forbidden', 'not_anonymous', 'Only an anonymous user can be upgraded.');
    await inTransaction(em, async (tx) => {
      await this.users.update(tx, userId, { email, ...(name ? { name } : {}) });
      await this.users.changePassword(tx, userId, null, password);
      await tx.nativeUpdate(AnonymousAccount, { id: account.id }, { upgradedAt: this.clock.now() });
      await tx.nativeUpdate(AnonymousToken, { account: account.id, revokedAt: null }, { revokedAt: this.clock.now() });
    });
    this.authenticator.invalidateUser(userId);
    return this.users.getById(em.fork(), userId);
  }

  private async createAccount(em: EntityManager, identifier: string, password: string): Promise<AnonymousAccount> {
    const passwordHash = await this.hasher.hash(password);
    const user = await this.users.create(em, { email: `anonymous-${this.ids.next()}@anonymous.invalid`, password: null, name: 'Anonymous' });
    try {
      return await inTransaction(em, async (tx) => {
        const account = tx.create(AnonymousAccount, { id: this.ids.next(), identifier, user: tx.getReference(User, user.id), passwordHash, upgradedAt: null } as AnonymousAccount);
        await tx.flush();
        return account;
      });
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      // The same identifier signed in twice at once: the other request created the account.
      await em.fork().nativeDelete(User, { id: user.id });
      const existing = await em.fork().findOne(AnonymousAccount, { identifier }, { populate: ['user'] });
      if (!existing || !(await this.hasher.verify(existing.passwordHash, password))) throw invalidCredentials();
      return existing;
    }
  }

  private async issue(em: EntityManager, account: AnonymousAccount, family: string): Promise<AnonymousTokenResponse> {
    const now = this.clock.nowMs();
    const { accessTokenTtlSeconds, refreshTokenTtlSeconds } = this.config.anonymous;
    const access = generateOpaqueToken(ANONYMOUS_TOKEN_PREFIX);
    const refresh = generateOpaqueToken(ANONYMOUS_TOKEN_PREFIX);
    const base = { account: em.getReference(AnonymousAccount, account.id), user: em.getReference(User, account.user.id), family, usedAt: null, revokedAt: null };
    em.create(AnonymousToken, { ...base, id: this.ids.next(), kind: 'access', tokenHash: sha256Hex(access), expiresAt: new Date(now + accessTokenTtlSeconds * 1000) } as AnonymousToken);
    em.create(AnonymousToken, { ...base, id: this.ids.next(), kind: 'refresh', tokenHash: sha256Hex(refresh), expiresAt: new Date(now + refreshTokenTtlSeconds * 1000) } as AnonymousToken);
    await em.flush();
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: accessTokenTtlSeconds,
      refresh_token: refresh,
      refresh_expires_in: refreshTokenTtlSeconds,
      user_id: account.user.id,
      anonymous: account.identifier,
    };
  }

  private async revokeFamily(em: EntityManager, family: string): Promise<void> {
    const rows = await em.find(AnonymousToken, { family, kind: 'access' }, { fields: ['id'] });
    await em.nativeUpdate(AnonymousToken, { family, revokedAt: null }, { revokedAt: this.clock.now() });
    const ids = new Set(rows.map((row) => row.id));
    this.authenticator.invalidateWhere((principal) => principal.kind === 'anonymous' && ids.has(principal.credentialId ?? ''));
  }
}
