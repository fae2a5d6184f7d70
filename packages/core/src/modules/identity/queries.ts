import type { EntityManager } from '@mikro-orm/core';
import type { PrincipalUser } from '../../kernel/auth/principal.js';
import { sqlBool, sqlDate, sqlStatement, type PreparedStatements } from '../../ports/database.js';
import type { TeamRole } from './entities/team.entity.js';
import type { TeamView } from './schemas.js';

/**
 * The identity module's hot-path statements (prepared once, see PreparedStatements): the user
 * behind a credential, read on every uncached authentication, and the teams `GET /auth/me` lists.
 * Everything else goes through the ORM.
 */

/** The columns of the principal snapshot (`users.*` minus secrets and profile). */
export const principalUserColumns = (alias: string, prefix = '') =>
  [
    ['id', 'id'],
    ['email', 'email'],
    ['name', 'name'],
    ['avatar_url', 'avatarUrl'],
    ['status', 'status'],
    ['is_site_admin', 'isSiteAdmin'],
    ['is_developer', 'isDeveloper'],
    ['is_administrator', 'isAdministrator'],
    ['password_changed_at', 'passwordChangedAt'],
    ['created_at', 'createdAt'],
    ['updated_at', 'updatedAt'],
  ]
    .map(([column, name]) => `"${alias}"."${column}" as "${prefix}${name}"`)
    .join(', ');

const userById = sqlStatement('identity.principal_user_by_id', `select ${principalUserColumns('u')} from "users" "u" where "u"."id" = ?`);

export interface PrincipalUserRecord {
  user: PrincipalUser;
  passwordChangedAt: Date | null;
}

/** A principal user read from raw columns named `<prefix>id`, `<prefix>email`, ... (see principalUserColumns). */
export function principalUserFromRow(row: Record<string, unknown>, prefix = ''): PrincipalUserRecord {
  const at = (name: string) => sqlDate(row[prefix + name]);
  return {
    user: {
      id: row[`${prefix}id`] as string,
      email: row[`${prefix}email`] as string,
      name: row[`${prefix}name`] as string,
      avatarUrl: (row[`${prefix}avatarUrl`] as string | null) ?? null,
      status: row[`${prefix}status`] as PrincipalUser['status'],
      isSiteAdmin: sqlBool(row[`${prefix}isSiteAdmin`]),
      isDeveloper: sqlBool(row[`${prefix}isDeveloper`]),
      isAdministrator: sqlBool(row[`${prefix}isAdministrator`]),
      createdAt: at('createdAt')!.toISOString(),
      updatedAt: at('updatedAt')!.toISOString(),
    },
    passwordChangedAt: at('passwordChangedAt'),
  };
}

/** The user with this id, as a principal snapshot, or null. */
export async function findPrincipalUser(sql: PreparedStatements, id: string, em?: EntityManager): Promise<PrincipalUserRecord | null> {
  const row = await sql.first<Record<string, unknown>>(userById, [id], em);
  return row ? principalUserFromRow(row) : null;
}

const accessKeyByHash = sqlStatement(
  'identity.access_key_by_hash',
  `select "k"."id" as "keyId", "k"."scopes" as "keyScopes", "k"."expires_at" as "keyExpiresAt", "k"."last_used_at" as "keyLastUsedAt",
    "k"."revoked_at" as "keyRevokedAt", ${principalUserColumns('u', 'user_')}
  from "access_keys" "k" join "users" "u" on "u"."id" = "k"."user_id" where "k"."token_hash" = ?`,
);

/** An API key or agent token with its user, as the verifier checks them. */
export interface AccessKeyRecord {
  id: string;
  scopes: string[] | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  user: PrincipalUser;
}

/** The API key or agent token with this SHA-256 digest (revoked or expired ones included), or null. */
export async function findAccessKey(sql: PreparedStatements, tokenHash: string): Promise<AccessKeyRecord | null> {
  const row = await sql.first<Record<string, unknown>>(accessKeyByHash, [tokenHash]);
  if (!row) return null;
  const scopes = row['keyScopes'];
  return {
    id: row['keyId'] as string,
    // A json column: text on SQLite, parsed on PostgreSQL.
    scopes: scopes === null || scopes === undefined ? null : ((typeof scopes === 'string' ? JSON.parse(scopes) : scopes) as string[]),
    expiresAt: sqlDate(row['keyExpiresAt']),
    lastUsedAt: sqlDate(row['keyLastUsedAt']),
    revokedAt: sqlDate(row['keyRevokedAt']),
    user: principalUserFromRow(row, 'user_').user,
  };
}

const touchAccessKey = sqlStatement('identity.touch_access_key', 'update "access_keys" set "last_used_at" = ?, "last_used_ip" = ? where "id" = ?');

/** Records the last use of an API key or agent token (the verifier throttles how often). */
export async function touchAccessKeyUse(sql: PreparedStatements, id: string, at: Date, ip: string): Promise<void> {
  await sql.run(touchAccessKey, [at, ip, id]);
}

const teamsOfUser = sqlStatement(
  'identity.teams_of_user',
  `select "t"."id", "t"."name", "t"."personal", "t"."created_at" as "createdAt", "t"."updated_at" as "updatedAt", "m"."role"
  from "team_members" "m" join "teams" "t" on "t"."id" = "m"."team_id" where "m"."user_id" = ?`,
);

/** A user's teams with the user's role in each, as `GET /auth/me` shows them: personal team first, then by creation. */
export async function findTeamsOfUser(sql: PreparedStatements, userId: string, em?: EntityManager): Promise<TeamView[]> {
  const rows = await sql.all<Record<string, unknown>>(teamsOfUser, [userId], em);
  const teams = rows.map((row) => ({
    view: {
      id: row['id'] as string,
      name: row['name'] as string,
      personal: sqlBool(row['personal']),
      role: row['role'] as TeamRole,
      createdAt: sqlDate(row['createdAt'])!.toISOString(),
      updatedAt: sqlDate(row['updatedAt'])!.toISOString(),
    },
    createdAtMs: sqlDate(row['createdAt'])!.getTime(),
  }));
  // The order of TeamService.listForUser.
  teams.sort((a, b) => Number(b.view.personal) - Number(a.view.personal) || a.createdAtMs - b.createdAtMs || a.view.id.localeCompare(b.view.id));
  return teams.map((team) => team.view);
}
