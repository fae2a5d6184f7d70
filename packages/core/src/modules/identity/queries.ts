import type { EntityManager } from '@mikro-orm/core';
import type { PrincipalUser } from '../../kernel/auth/principal.js';
import { sqlBool, sqlDate, sqlStatement, type PreparedStatements } from '../../ports/database.js';

/**
 * The identity module's hot-path statements (prepared once, see PreparedStatements): the user
 * behind a credential, read on every uncached authentication. Everything else goes through the ORM.
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
