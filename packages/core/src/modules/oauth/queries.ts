import type { EntityManager } from '@mikro-orm/core';
import type { PrincipalUser } from '../../kernel/auth/principal.js';
import { sqlDate, sqlStatement, type PreparedStatements } from '../../ports/database.js';
import { principalUserColumns, principalUserFromRow } from '../identity/index.js';
import type { RevocationReason } from './entities/token-family.entity.js';

/**
 * The OAuth module's hot-path statements (prepared once, see PreparedStatements): the token
 * endpoint's app and refresh-token lookup (one statement for a refresh grant), the rotation's claim
 * (with the family check folded in) and new pair, the access-token check of every OAuth request,
 * and revocation. Administration, codes and audit go through the ORM.
 */

const appByClientId = sqlStatement(
  'oauth.token_app_by_client_id',
  'select "id", "client_id" as "clientId", "token_epoch" as "tokenEpoch", "disabled_at" as "disabledAt" from "oauth_apps" where "client_id" = ? and "deleted_at" is null',
);

/** What the token endpoint needs of an app. */
export interface TokenApp {
  id: string;
  clientId: string;
  tokenEpoch: number;
}

/** The active (neither disabled nor deleted) app behind a client_id, or null. */
export async function findTokenApp(sql: PreparedStatements, clientId: string): Promise<TokenApp | null> {
  const row = await sql.first<{ id: string; clientId: string; tokenEpoch: number | string; disabledAt: unknown }>(appByClientId, [clientId]);
  if (!row || sqlDate(row.disabledAt)) return null;
  return { id: row.id, clientId: row.clientId, tokenEpoch: Number(row.tokenEpoch) };
}

const refreshTokenColumns = `"t"."id", "t"."app_id" as "appId", "t"."user_id" as "userId", "u"."status" as "userStatus", "t"."expires_at" as "expiresAt",
  "t"."revoked_at" as "revokedAt", "t"."revoked_reason" as "revokedReason", "f"."id" as "familyId", "f"."scope" as "familyScope",
  "f"."app_epoch" as "familyAppEpoch", "f"."expires_at" as "familyExpiresAt", "f"."revoked_at" as "familyRevokedAt"`;
const refreshTokenJoins = `join "oauth_token_families" "f" on "f"."id" = "t"."token_family" join "users" "u" on "u"."id" = "t"."user_id"`;

const refreshTokenByHash = sqlStatement('oauth.refresh_token_by_hash', `select ${refreshTokenColumns} from "oauth_tokens" "t" ${refreshTokenJoins} where "t"."token_hash" = ? and "t"."kind" = 'refresh'`);
const refreshTokenById = sqlStatement('oauth.refresh_token_by_id', `select ${refreshTokenColumns} from "oauth_tokens" "t" ${refreshTokenJoins} where "t"."id" = ?`);

/** A stored refresh token with what the refresh checks read of its family, app and user. */
export interface RefreshTokenRecord {
  id: string;
  app: { id: string };
  user: { id: string; status: string };
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: RevocationReason | null;
  tokenFamily: { id: string; scope: string; appEpoch: number; expiresAt: Date | null; revokedAt: Date | null };
}

function refreshTokenFromRow(row: Record<string, unknown>): RefreshTokenRecord {
  return {
    id: row['id'] as string,
    app: { id: row['appId'] as string },
    user: { id: row['userId'] as string, status: row['userStatus'] as string },
    expiresAt: sqlDate(row['expiresAt'])!,
    revokedAt: sqlDate(row['revokedAt']),
    revokedReason: (row['revokedReason'] as RevocationReason | null) ?? null,
    tokenFamily: {
      id: row['familyId'] as string,
      scope: row['familyScope'] as string,
      appEpoch: Number(row['familyAppEpoch']),
      expiresAt: sqlDate(row['familyExpiresAt']),
      revokedAt: sqlDate(row['familyRevokedAt']),
    },
  };
}

/**
 * The refresh grant's one read: the app behind the client_id and, when there is one, the refresh
 * token with this digest, its family and its user. No row: no active app; a row whose token
 * columns are null: no such refresh token.
 */
const refreshGrantLookup = sqlStatement(
  'oauth.refresh_grant_lookup',
  `select "a"."id" as "appRowId", "a"."client_id" as "appClientId", "a"."token_epoch" as "appTokenEpoch", "a"."disabled_at" as "appDisabledAt", ${refreshTokenColumns}
  from "oauth_apps" "a" left join "oauth_tokens" "t" on "t"."token_hash" = ? and "t"."kind" = 'refresh'
    left join "oauth_token_families" "f" on "f"."id" = "t"."token_family" left join "users" "u" on "u"."id" = "t"."user_id"
  where "a"."client_id" = ? and "a"."deleted_at" is null`,
);

/** What the refresh grant's one read found: the active app (or null) and the refresh token (or null). */
export interface RefreshGrantLookup {
  app: TokenApp | null;
  refreshToken: RefreshTokenRecord | null;
}

/** The active app behind `clientId` and the refresh token with digest `tokenHash`, in one statement. */
export async function findRefreshGrant(sql: PreparedStatements, clientId: string, tokenHash: string): Promise<RefreshGrantLookup> {
  const row = await sql.first<Record<string, unknown>>(refreshGrantLookup, [tokenHash, clientId]);
  if (!row || sqlDate(row['appDisabledAt'])) return { app: null, refreshToken: null };
  return {
    app: { id: row['appRowId'] as string, clientId: row['appClientId'] as string, tokenEpoch: Number(row['appTokenEpoch']) },
    // A token whose family or user is gone (cascade deletes) is no token, as with the inner joins.
    refreshToken: row['id'] === null || row['id'] === undefined || row['familyId'] === null || row['userStatus'] === null ? null : refreshTokenFromRow(row),
  };
}

/** The refresh token with this SHA-256 digest, or null. */
export async function findRefreshToken(sql: PreparedStatements, tokenHash: string): Promise<RefreshTokenRecord | null> {
  const row = await sql.first<Record<string, unknown>>(refreshTokenByHash, [tokenHash]);
  return row ? refreshTokenFromRow(row) : null;
}

/** The refresh token with this id, as stored now (after a lost race for its rotation), or null. */
export async function findRefreshTokenById(sql: PreparedStatements, id: string): Promise<RefreshTokenRecord | null> {
  const row = await sql.first<Record<string, unknown>>(refreshTokenById, [id]);
  return row ? refreshTokenFromRow(row) : null;
}

const claimRefreshToken = sqlStatement(
  'oauth.claim_refresh_token',
  `update "oauth_tokens" set "revoked_at" = ?, "revoked_reason" = 'rotated', "last_used_at" = ?, "last_used_ip" = ?, "last_used_user_agent" = ?
  where "id" = ? and "revoked_at" is null
    and exists (select 1 from "oauth_token_families" "f" where "f"."id" = ? and "f"."revoked_at" is null and "f"."app_epoch" = ?)`,
);

/**
 * Marks a refresh token rotated if nobody did yet and its family is still live (neither revoked
 * nor from before the app's epoch `appEpoch`), in one statement; true when this call did. False
 * leaves both unchanged: a concurrent rotation won, or the family ended since it was read.
 */
export async function claimRefreshTokenOnce(
  sql: PreparedStatements,
  em: EntityManager,
  token: { id: string; familyId: string; appEpoch: number },
  now: Date,
  ip: string,
  userAgent: string,
): Promise<boolean> {
  return (await sql.run(claimRefreshToken, [now, now, ip, userAgent, token.id, token.familyId, token.appEpoch], em)) === 1;
}

const liveFamily = sqlStatement('oauth.live_family', 'select 1 as "live" from "oauth_token_families" where "id" = ? and "revoked_at" is null and "app_epoch" = ?');

/** Whether the family is neither revoked nor from before the app's current epoch (a grace replay's check: it claims nothing). */
export async function familyIsLive(sql: PreparedStatements, em: EntityManager, familyId: string, appEpoch: number): Promise<boolean> {
  return (await sql.first(liveFamily, [familyId, appEpoch], em)) !== undefined;
}

const tokenColumns = '"id", "kind", "token_hash", "token_family", "app_id", "user_id", "scope", "expires_at", "revoked_at", "revoked_reason", "last_used_at", "last_used_ip", "last_used_user_agent", "created_at"';
const tokenValues = '(?, ?, ?, ?, ?, ?, ?, ?, null, null, null, null, null, ?)';
const insertTokenPair = sqlStatement('oauth.insert_token_pair', `insert into "oauth_tokens" (${tokenColumns}) values ${tokenValues}, ${tokenValues}`);

/** A new token row (never used, not revoked). */
export interface NewToken {
  id: string;
  kind: 'access' | 'refresh';
  tokenHash: string;
  familyId: string;
  appId: string;
  userId: string;
  scope: string;
  expiresAt: Date;
  createdAt: Date;
}

/** Inserts an access and a refresh token in one statement. */
export async function insertTokens(sql: PreparedStatements, em: EntityManager, pair: readonly [NewToken, NewToken]): Promise<void> {
  const values = pair.flatMap((t) => [t.id, t.kind, t.tokenHash, t.familyId, t.appId, t.userId, t.scope, t.expiresAt, t.createdAt]);
  await sql.run(insertTokenPair, values, em);
}

const accessTokenByHash = sqlStatement(
  'oauth.access_token_by_hash',
  `select "t"."id" as "tokenId", "t"."scope" as "tokenScope", "t"."expires_at" as "tokenExpiresAt", "t"."revoked_at" as "tokenRevokedAt", "t"."last_used_at" as "tokenLastUsedAt",
    "f"."revoked_at" as "familyRevokedAt", "f"."expires_at" as "familyExpiresAt", "f"."app_epoch" as "familyAppEpoch",
    "a"."token_epoch" as "appTokenEpoch", "a"."disabled_at" as "appDisabledAt", "a"."deleted_at" as "appDeletedAt", "a"."client_id" as "appClientId",
    ${principalUserColumns('u', 'user_')}
  from "oauth_tokens" "t" join "oauth_token_families" "f" on "f"."id" = "t"."token_family" join "oauth_apps" "a" on "a"."id" = "t"."app_id" join "users" "u" on "u"."id" = "t"."user_id"
  where "t"."token_hash" = ? and "t"."kind" = 'access'`,
);

/** An access token with its family, app and user, as the verifier checks them. */
export interface AccessTokenRecord {
  id: string;
  scope: string;
  expiresAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  family: { revokedAt: Date | null; expiresAt: Date | null; appEpoch: number };
  app: { tokenEpoch: number; disabledAt: Date | null; deletedAt: Date | null; clientId: string };
  user: PrincipalUser;
}

/** The access token with this SHA-256 digest, or null. */
export async function findAccessToken(sql: PreparedStatements, tokenHash: string): Promise<AccessTokenRecord | null> {
  const row = await sql.first<Record<string, unknown>>(accessTokenByHash, [tokenHash]);
  if (!row) return null;
  return {
    id: row['tokenId'] as string,
    scope: row['tokenScope'] as string,
    expiresAt: sqlDate(row['tokenExpiresAt'])!,
    revokedAt: sqlDate(row['tokenRevokedAt']),
    lastUsedAt: sqlDate(row['tokenLastUsedAt']),
    family: { revokedAt: sqlDate(row['familyRevokedAt']), expiresAt: sqlDate(row['familyExpiresAt']), appEpoch: Number(row['familyAppEpoch']) },
    app: { tokenEpoch: Number(row['appTokenEpoch']), disabledAt: sqlDate(row['appDisabledAt']), deletedAt: sqlDate(row['appDeletedAt']), clientId: row['appClientId'] as string },
    user: principalUserFromRow(row, 'user_').user,
  };
}

const touchToken = sqlStatement('oauth.touch_token', 'update "oauth_tokens" set "last_used_at" = ?, "last_used_ip" = ?, "last_used_user_agent" = ? where "id" = ?');

/** Records the last use of a token (the verifier throttles how often). */
export async function touchTokenUse(sql: PreparedStatements, id: string, at: Date, ip: string, userAgent: string): Promise<void> {
  await sql.run(touchToken, [at, ip, userAgent, id]);
}

const tokenByHash = sqlStatement(
  'oauth.token_by_hash',
  'select "t"."id", "t"."kind", "t"."token_family" as "familyId", "a"."client_id" as "clientId" from "oauth_tokens" "t" join "oauth_apps" "a" on "a"."id" = "t"."app_id" where "t"."token_hash" = ?',
);

/** Any token (access or refresh) by digest, for revocation, or null. */
export async function findTokenForRevocation(
  sql: PreparedStatements,
  tokenHash: string,
  em?: EntityManager,
): Promise<{ id: string; kind: 'access' | 'refresh'; familyId: string; clientId: string } | undefined> {
  return sql.first(tokenByHash, [tokenHash], em);
}

const revokeToken = sqlStatement('oauth.revoke_token', 'update "oauth_tokens" set "revoked_at" = ?, "revoked_reason" = ? where "id" = ? and "revoked_at" is null');
const revokeFamilyRow = sqlStatement('oauth.revoke_family', 'update "oauth_token_families" set "revoked_at" = ?, "revoked_reason" = ? where "id" = ? and "revoked_at" is null');
const revokeFamilyTokens = sqlStatement('oauth.revoke_family_tokens', 'update "oauth_tokens" set "revoked_at" = ?, "revoked_reason" = ? where "token_family" = ? and "revoked_at" is null');
const liveAccessTokensOfFamily = sqlStatement(
  'oauth.live_access_tokens_of_family',
  'select "id" from "oauth_tokens" where "token_family" = ? and "kind" = \'access\' and "expires_at" > ?',
);

/** Revokes one token unless it already is. */
export async function revokeTokenRow(sql: PreparedStatements, id: string, at: Date, reason: RevocationReason, em?: EntityManager): Promise<void> {
  await sql.run(revokeToken, [at, reason, id], em);
}

/** Revokes a family and its tokens (those not revoked yet); answers the ids of its unexpired access tokens. */
export async function revokeFamilyRows(sql: PreparedStatements, familyId: string, at: Date, reason: RevocationReason, em?: EntityManager): Promise<string[]> {
  await sql.run(revokeFamilyRow, [at, reason, familyId], em);
  await sql.run(revokeFamilyTokens, [at, reason, familyId], em);
  return (await sql.all<{ id: string }>(liveAccessTokensOfFamily, [familyId, at], em)).map((row) => row.id);
}
