import type { User } from '../identity/index.js';
import type { UserRole } from './dto/user.dto.js';
import type { AdminUserView } from './schemas.js';

/** The roles whose filter matches a user (see `userRoles`). */
export function rolesOf(user: User): UserRole[] {
  const roles: UserRole[] = [];
  if (user.isSiteAdmin) roles.push('site_admin');
  if (user.isAdministrator || user.isSiteAdmin) roles.push('administrator');
  if (user.isDeveloper || user.isSiteAdmin) roles.push('developer');
  if (roles.length === 0) roles.push('user');
  return roles;
}

export const toAdminUserView = (user: User): AdminUserView => ({
  id: user.id,
  username: user.name,
  email: user.email,
  phone: user.phone,
  status: user.status,
  profile: user.profile,
  avatarUrl: user.avatarUrl,
  roles: rolesOf(user),
  isSiteAdmin: user.isSiteAdmin,
  isDeveloper: user.isDeveloper,
  isAdministrator: user.isAdministrator,
  createdAt: user.createdAt.toISOString(),
  updatedAt: user.updatedAt.toISOString(),
});
