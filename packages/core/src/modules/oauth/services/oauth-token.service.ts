import type { AccessRevokedSignal } from '../../../kernel/auth/access-revocation.js';
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import { generateOpaqueToken, sha256Hex } from '../../../kernel/crypto.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { authenticatorServiceIdentifier, hooksServiceIdentifier, loggerServiceIdentifier, ormServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { User } from '../../identity/index.js';
import {
  authorizationCodeChecks,
  invalidCodeDescription,
  invalidRefreshDescription,
  refreshTokenChecks,
  type ReuseKind,
  type TokenCheck,
  type TokenCheckContext,
  type TokenParams,
  type TokenRequest,
} from '../checks/token/index.js';
import { oauthConfigServiceIdentifier, type OAuthConfig } from '../config.js';
import { OAuthAuthorizationCode } from '../entities/authorization-code.entity.js';
import { OAuthApp } from '../entities/oauth-app.entity.js';
import { OAuthToken } from '../entities/oauth-token.entity.js';
import { OAuthTokenFamily, type RevocationReason } from '../entities/token-family.entity.js';
import { InvalidGrant, InvalidRequest, UnsupportedGrantType } from '../oauth-errors.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements } from '../../../ports/database.js';
import {
  claimRefreshTokenOnce,
  familyIsLive,
  findRefreshTokenById,
  findTokenForRevocation,
  insertTokens,
  revokeFamilyRows,
  revokeTokenRow,
  type NewToken,
} from '../queries.js';
import '../hooks.js';
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from '../token-prefixes.js';
import { OAuthAuditService } from './oauth-audit.service.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { GroupCommit } from '../../../kernel/group-commit.js';
import type { TokenResponse } from '../schemas.js';

export interface RequestMeta {
  ip: string;
  userAgent: string;
}

const grants: Readonly<Record<string, readonly TokenCheck[]>> = {
  authorization_code: authorizationCodeChecks,
  refresh_token: refreshTokenChecks,
};

/**
 * The token endpoint and everything that ends tokens. Tokens are opaque (`toa_`, `tor_`, 256 bits
 * of randomness) and stored as SHA-256 digests. Every claim of a single-use secret (a code, a
 * refresh token) is a conditional update inside the transaction that issues its successors, so
 * concurrent requests with the same secret cannot both succeed, on SQLite and PostgreSQL alike.
 */
@injectable()
export class OAuthTokenService {
  private readonly log: Logger;
  /** Rotations share commits on SQLite (see GroupCommit); on PostgreSQL each is its own transaction. */
  private readonly rotations: GroupCommit;

  constructor(
    @inject(oauthConfigServiceIdentifier) private readonly config: OAuthConfig,
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(OAuthAuditService) private readonly audit: OAuthAuditService,
    @inject(loggerServiceIdentifier) log: Logger,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {
    this.log = log.child({ module: 'oauth' });
    this.rotations = new GroupCommit(() => this.orm.em.fork(), sql.dialect === 'sqlite');
  }

  /** POST /oauth/token: runs the grant's checks in order, then issues a token pair. */
  async grant(em: EntityManager, params: TokenParams, meta: RequestMeta): Promise<TokenResponse> {
    const grantType = params.grant_type;
    if (!grantType) throw new InvalidRequest('grant_type is required.');
    const checks = Object.hasOwn(grants, grantType) ? grants[grantType] : undefined;
    if (!checks) throw new UnsupportedGrantType('grant_type must be authorization_code or refresh_token.');
    const request: TokenRequest = { params };
    const ctx: TokenCheckContext = {
      em,
      sql: this.sql,
      now: this.clock.now(),
      graceMs: this.config.refreshGraceSeconds * 1000,
      onReuse: (kind, familyId, req) => this.reuseDetected(kind, familyId, req, meta),
    };
    for (const check of checks) await check.run(request, ctx);
    return grantType === 'authorization_code' ? this.exchangeCode(em, request, meta) : this.rotate(em, request, meta);
  }

  /** RFC 7009 §2.1: revokes a token if it is one of ours (and of `clientId`, when given). Never says which. */
  async revoke(em: EntityManager, token: string, clientId: string | undefined): Promise<void> {
    if (!token.startsWith(ACCESS_TOKEN_PREFIX) && !token.startsWith(REFRESH_TOKEN_PREFIX)) return;
    const row = await findTokenForRevocation(this.sql, sha256Hex(token), em);
    if (!row) return;
    if (clientId !== undefined && row.clientId !== clientId) return;
    if (row.kind === 'refresh') {
      // RFC 7009 §2.1: revoking a refresh token also ends the access tokens of the same grant.
      await this.revokeFamily(em, row.familyId, 'revoked');
      return;
    }
    await revokeTokenRow(this.sql, row.id, this.clock.now(), 'revoked', em);
    this.authenticator.invalidateWhere((principal) => principal.kind === 'oauth' && principal.credentialId === row.id);
    await this.signal({ kind: 'credentials', credentialIds: [row.id] });
  }

  /** Ends a token family and every token in it, and drops its access tokens from the credential cache. */
  async revokeFamily(em: EntityManager, familyId: string, reason: RevocationReason): Promise<void> {
    const ids = new Set(await revokeFamilyRows(this.sql, familyId, this.clock.now(), reason, em));
    if (ids.size) {
      this.authenticator.invalidateWhere((principal) => principal.kind === 'oauth' && ids.has(principal.credentialId ?? ''));
      await this.signal({ kind: 'credentials', credentialIds: [...ids] });
    }
  }

  /** Tells every process's open sockets (a failing signal does not undo the revocation). */
  private async signal(signal: AccessRevokedSignal): Promise<void> {
    try {
      await this.hooks.emit('access.revoked', signal);
    } catch (error) {
      this.log.error({ err: error }, 'an access.revoked hook failed');
    }
  }

  /**
   * Ends every grant of an app: its epoch moves on (codes and families of older epochs are dead,
   * including any being written right now), and its families and tokens are marked revoked.
   */
  async revokeApp(em: EntityManager, app: OAuthApp, reason: 'app_changed' | 'app_disabled' | 'app_deleted'): Promise<void> {
    const now = this.clock.now();
    await inTransaction(em, async (tx) => {
      await tx.nativeUpdate(OAuthApp, { id: app.id }, { tokenEpoch: app.tokenEpoch + 1 });
      await tx.nativeUpdate(OAuthTokenFamily, { app: app.id, revokedAt: null }, { revokedAt: now, revokedReason: reason });
      await tx.nativeUpdate(OAuthToken, { app: app.id, revokedAt: null }, { revokedAt: now, revokedReason: reason });
    });
    this.authenticator.invalidateWhere((principal) => principal.kind === 'oauth' && principal.clientId === app.clientId);
    await this.signal({ kind: 'oauth_client', clientId: app.clientId });
    try {
      await this.hooks.emit('oauth.app_tokens_revoked', { clientId: app.clientId, reason });
    } catch (error) {
      this.log.error({ err: error }, 'an oauth.app_tokens_revoked hook failed');
    }
  }

  private async exchangeCode(em: EntityManager, request: TokenRequest, meta: RequestMeta): Promise<TokenResponse> {
    const code = request.code!;
    const app = request.app!;
    const now = this.clock.now();
    const lifetime = this.config.familyLifetimeSeconds;
    const issued = await inTransaction(em, async (tx) => {
      const claimed = await tx.nativeUpdate(OAuthAuthorizationCode, { id: code.id, consumedAt: null }, { consumedAt: now });
      if (claimed !== 1) return null;
      const family = tx.create(OAuthTokenFamily, {
        id: code.tokenFamilyId,
        app: tx.getReference(OAuthApp, app.id),
        user: tx.getReference(User, code.user.id),
        scope: code.scope,
        appEpoch: code.appEpoch,
        expiresAt: lifetime > 0 ? new Date(now.getTime() + lifetime * 1000) : null,
        revokedAt: null,
        revokedReason: null,
        createdAt: now,
      } as OAuthTokenFamily);
      const { response, tokens } = this.issuePair(family.id, app.id, code.user.id, request.scopes!, now, family.expiresAt);
      // The family is new in this unit of work: the tokens go in with it at the flush.
      for (const token of tokens) {
        tx.create(OAuthToken, {
          id: token.id,
          kind: token.kind,
          tokenHash: token.tokenHash,
          tokenFamily: family,
          app: tx.getReference(OAuthApp, token.appId),
          user: tx.getReference(User, token.userId),
          scope: token.scope,
          expiresAt: token.expiresAt,
          revokedAt: null,
          revokedReason: null,
          lastUsedAt: null,
          lastUsedIp: null,
          lastUsedUserAgent: null,
          createdAt: token.createdAt,
        } as OAuthToken);
      }
      return response;
    });
    if (!issued) {
      // Another exchange of this code committed first: this is a second use.
      await this.reuseDetected('authorization_code', code.tokenFamilyId, request, meta);
      throw new InvalidGrant(invalidCodeDescription);
    }
    await this.announce(app.clientId, code.user.id, code.tokenFamilyId, 'authorization_code');
    return issued;
  }

  private async rotate(em: EntityManager, request: TokenRequest, meta: RequestMeta, retried = false): Promise<TokenResponse> {
    const old = request.refreshToken!;
    const app = request.app!;
    const family = old.tokenFamily;
    const now = this.clock.now();
    const ip = meta.ip.slice(0, 64);
    const userAgent = meta.userAgent.slice(0, 512);
    // One unit of a group commit: concurrent rotations on SQLite share a transaction, each still
    // claiming its own token with a conditional update, so a lost claim writes nothing.
    const issued = await this.rotations.run(
      async (tx) => {
        if (request.graceReplay) {
          // A benign double refresh claims nothing; the family must still be live.
          if (!(await familyIsLive(this.sql, tx, family.id, app.tokenEpoch))) throw new InvalidGrant(invalidRefreshDescription);
        } else if (!(await claimRefreshTokenOnce(this.sql, tx, { id: old.id, familyId: family.id, appEpoch: app.tokenEpoch }, now, ip, userAgent))) {
          // Rotated by a concurrent request, or its family ended (a reuse, an app change) since the checks read it.
          return null;
        }
        const { response, tokens } = this.issuePair(family.id, app.id, old.user.id, request.scopes!, now, family.expiresAt);
        await insertTokens(this.sql, tx, tokens);
        return response;
      },
      // Nothing is written before the family check that throws.
      { atomic: (error) => error instanceof InvalidGrant },
    );
    if (!issued) {
      // A concurrent request rotated this token first. Within the grace window that is a benign
      // double refresh; otherwise it is reuse.
      const fresh = await findRefreshTokenById(this.sql, old.id);
      const graceMs = this.config.refreshGraceSeconds * 1000;
      const rotated = fresh?.revokedReason === 'rotated' && fresh.revokedAt;
      if (rotated && !retried && graceMs > 0 && this.clock.nowMs() - fresh.revokedAt!.getTime() <= graceMs && !fresh.tokenFamily.revokedAt) {
        request.graceReplay = true;
        return this.rotate(em, request, meta, true);
      }
      if (rotated) await this.reuseDetected('refresh_token', family.id, request, meta);
      throw new InvalidGrant(invalidRefreshDescription);
    }
    await this.announce(app.clientId, old.user.id, family.id, 'refresh_token');
    return issued;
  }

  /** A new access and refresh token of a family: the answer, and the rows to store (hashes only). */
  private issuePair(
    familyId: string,
    appId: string,
    userId: string,
    scopes: readonly string[],
    now: Date,
    familyExpiresAt: Date | null,
  ): { response: TokenResponse; tokens: [NewToken, NewToken] } {
    const cap = (seconds: number) => {
      const end = now.getTime() + seconds * 1000;
      return new Date(familyExpiresAt ? Math.min(end, familyExpiresAt.getTime()) : end);
    };
    const scope = scopes.join(' ');
    const accessToken = generateOpaqueToken(ACCESS_TOKEN_PREFIX);
    const refreshToken = generateOpaqueToken(REFRESH_TOKEN_PREFIX);
    const accessExpiresAt = cap(this.config.accessTokenTtlSeconds);
    const base = { familyId, appId, userId, scope, createdAt: now };
    return {
      tokens: [
        { ...base, id: this.ids.next(), kind: 'access', tokenHash: sha256Hex(accessToken), expiresAt: accessExpiresAt },
        { ...base, id: this.ids.next(), kind: 'refresh', tokenHash: sha256Hex(refreshToken), expiresAt: cap(this.config.refreshTokenTtlSeconds) },
      ],
      response: {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: Math.max(1, Math.round((accessExpiresAt.getTime() - now.getTime()) / 1000)),
        refresh_token: refreshToken,
        scope,
      },
    };
  }

  /** Revokes the family a reused secret belongs to, then records and announces the event. */
  private async reuseDetected(kind: ReuseKind, familyId: string, request: TokenRequest, meta: RequestMeta): Promise<void> {
    await this.revokeFamily(this.orm.em.fork(), familyId, kind === 'authorization_code' ? 'code_reuse' : 'reuse_detected');
    const userId = request.code?.user.id ?? request.refreshToken?.user.id ?? null;
    await this.audit.reuseDetected({ kind, clientId: request.app!.clientId, userId, tokenFamily: familyId, ...meta });
  }

  private async announce(clientId: string, userId: string, tokenFamily: string, grantType: 'authorization_code' | 'refresh_token'): Promise<void> {
    try {
      await this.hooks.emit('oauth.tokens_issued', { clientId, userId, tokenFamily, grantType });
    } catch (error) {
      // The tokens are committed and about to be returned; a listener cannot take them back.
      this.log.error({ err: error }, 'an oauth.tokens_issued hook failed');
    }
  }
}
