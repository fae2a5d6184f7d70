import type { EntityManager } from '@mikro-orm/core';
import type { OAuthAuthorizationCode } from '../../entities/authorization-code.entity.js';
import type { PreparedStatements } from '../../../../ports/database.js';
import type { RefreshTokenRecord, TokenApp } from '../../queries.js';

/** Parameters of a token request, with empty values already treated as omitted. */
export interface TokenParams {
  grant_type?: string;
  client_id?: string;
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  refresh_token?: string;
  scope?: string;
}

/** A token request as the checks see it; each check records what it established. */
export interface TokenRequest {
  readonly params: TokenParams;
  app?: TokenApp;
  /** authorization_code: the stored code (set by `findCode`). */
  code?: OAuthAuthorizationCode;
  /** refresh_token: the stored refresh token, with its family, app and user (set by `findRefreshToken`). */
  refreshToken?: RefreshTokenRecord;
  /**
   * refresh_token: what `checkClientId` read of the presented refresh token in its lookup of the
   * app (null: none with that digest; undefined: not read, `findRefreshToken` looks it up).
   */
  prefetchedRefreshToken?: RefreshTokenRecord | null;
  /** refresh_token: the presented token was rotated within the grace window (set by `checkRotation`). */
  graceReplay?: boolean;
  /** The scopes the new tokens carry. */
  scopes?: string[];
}

export type ReuseKind = 'authorization_code' | 'refresh_token';

export interface TokenCheckContext {
  em: EntityManager;
  /** The hot-path statements (the app and refresh-token lookups). */
  sql: PreparedStatements;
  now: Date;
  /** `oauth.refreshGraceSeconds` in milliseconds. */
  graceMs: number;
  /**
   * A code or refresh token was presented again: revoke its token family and record the event.
   * Resolves once the revocation is committed.
   */
  onReuse(kind: ReuseKind, familyId: string, request: TokenRequest): Promise<void>;
}

/** One rule of the token endpoint. It throws an `OAuthError` when the request breaks it. */
export interface TokenCheck {
  readonly name: string;
  /** The RFC section the rule comes from. */
  readonly rule: string;
  run(request: TokenRequest, ctx: TokenCheckContext): void | Promise<void>;
}

/**
 * One description for every invalid code, so the answer does not tell an unknown code from an
 * expired, used or misbound one.
 */
export const invalidCodeDescription = 'The authorization code is invalid, expired, already used, or was issued for another request.';

/**
 * One description for every invalid refresh token (unknown, expired, revoked, rotated, of another
 * client): the answer is no oracle for what an attacker holds.
 */
export const invalidRefreshDescription = 'The refresh token is invalid, expired or revoked; sign in again.';
