import type { PrincipalUser } from '../../kernel/auth/principal.js';
import type { AccessKey } from './entities/access-key.entity.js';
import type { Team, TeamMember, TeamRole } from './entities/team.entity.js';
import type { User } from './entities/user.entity.js';
import type { AccessKeyView, MemberView, TeamView, UserView } from './schemas.js';

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
export const toPrincipalUser = (user: User): PrincipalUser => toUserView(user);

export const toTeamView = (team: Team, role: TeamRole): TeamView => ({
  id: team.id,
  name: team.name,
  personal: team.personal,
  role,
  createdAt: team.createdAt.toISOString(),
  updatedAt: team.updatedAt.toISOString(),
});

export const toMemberView = (member: TeamMember): MemberView => ({
  userId: member.user.id,
  email: member.user.email,
  name: member.user.name,
  role: member.role,
  joinedAt: member.createdAt.toISOString(),
});

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
