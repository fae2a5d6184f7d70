import type { PrincipalUser } from '../../kernel/auth/principal.js';
import type { AccessKey } from './entities/access-key.entity.js';
import type { Team, TeamMember, TeamRole } from './entities/team.entity.js';
import type { User } from './entities/user.entity.js';

export type UserView = PrincipalUser;

export const toUserView = (user: User): UserView => ({
  id: user.id,
  email: user.email,
  name: user.name,
  avatarUrl: user.avatarUrl,
  status: user.status,
  isSiteAdmin: user.isSiteAdmin,
  isDeveloper: user.isDeveloper,
  isAdministrator: user.isAdministrator,
  createdAt: user.createdAt.toISOString(),
  updatedAt: user.updatedAt.toISOString(),
});

/** The snapshot a verified credential carries; the same fields as the user view. */
export const toPrincipalUser = (user: User): PrincipalUser => toUserView(user) as PrincipalUser;

export interface TeamView {
  id: string;
  name: string;
  personal: boolean;
  role: TeamRole;
  createdAt: string;
  updatedAt: string;
}

export const toTeamView = (team: Team, role: TeamRole): TeamView => ({
  id: team.id,
  name: team.name,
  personal: team.personal,
  role,
  createdAt: team.createdAt.toISOString(),
  updatedAt: team.updatedAt.toISOString(),
});

export interface MemberView {
  userId: string;
  email: string;
  name: string;
  role: TeamRole;
  joinedAt: string;
}

export const toMemberView = (member: TeamMember): MemberView => ({
  userId: member.user.id,
  email: member.user.email,
  name: member.user.name,
  role: member.role,
  joinedAt: member.createdAt.toISOString(),
});

export interface AccessKeyView {
  id: string;
  kind: string;
  name: string;
  prefix: string;
  scopes: string[] | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

export const toAccessKeyView = (key: AccessKey): AccessKeyView => ({
  id: key.id,
  kind: key.kind,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  expiresAt: key.expiresAt?.toISOString() ?? null,
  lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  revokedAt: key.revokedAt?.toISOString() ?? null,
  createdAt: key.createdAt.toISOString(),
});
