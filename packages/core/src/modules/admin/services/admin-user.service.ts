import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { InferConfig } from '../../../kernel/config/schema.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { authenticatorServiceIdentifier, hooksServiceIdentifier } from '../../../kernel/tokens.js';
import { AuditService } from '../../audit/index.js';
import { User, JwtService, UserService, type UpdateUserInput } from '../../identity/index.js';
import type { adminConfigSchema } from '../admin.config.js';
import type { UserRole } from '../dto/user.dto.js';
import { inTransaction } from '../../../kernel/transaction.js';

export type AdminSettings = InferConfig<typeof adminConfigSchema>;
export const adminSettingsServiceIdentifier: ServiceIdentifier<AdminSettings> = Symbol.for('@trellis/core/AdminSettings');

export interface UserFilter {
  role?: UserRole;
  status?: 'active' | 'disabled';
}

export interface AdminUserUpdate {
  username?: string;
  email?: string;
  phone?: string | null;
  status?: 'active' | 'disabled';
  profile?: Record<string, unknown> | null;
  isDeveloper?: boolean;
  isAdministrator?: boolean;
  isSiteAdmin?: boolean;
}

const permissionFlags = ['isDeveloper', 'isAdministrator', 'isSiteAdmin'] as const;

/** Who acts, and from where: recorded in the audit trail. */
export interface Acting {
  principal: Principal;
  ip: string;
  userAgent: string;
}

export function userWhere(filter: UserFilter): FilterQuery<User> {
  const where: FilterQuery<User> & Record<string, unknown> = {};
  if (filter.status) where.status = filter.status;
  switch (filter.role) {
    case 'site_admin':
      where.isSiteAdmin = true;
      break;
    case 'administrator':
      where.$or = [{ isAdministrator: true }, { isSiteAdmin: true }];
      break;
    case 'developer':
      where.$or = [{ isDeveloper: true }, { isSiteAdmin: true }];
      break;
    case 'user':
      Object.assign(where, { isSiteAdmin: false, isAdministrator: false, isDeveloper: false });
      break;
    default:
      break;
  }
  return where;
}

const siteAdminProtected = () =>
  new TrellisError('forbidden', 'site_admin_protected', 'Only a site administrator may change or act as a site administrator.');

/** Users as administrators manage them: list, count, read, update, and act as one (`become`). */
@injectable()
export class AdminUserService {
  constructor(
    @inject(UserService) private readonly users: UserService,
    @inject(JwtService) private readonly jwt: JwtService,
    @inject(AuditService) private readonly audit: AuditService,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(adminSettingsServiceIdentifier) private readonly settings: AdminSettings,
  ) {}

  async list(em: EntityManager, filter: UserFilter, page: Paging): Promise<{ items: User[]; total: number }> {
    const [items, total] = await em.findAndCount(User, userWhere(filter), {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
    });
    return { items, total };
  }

  count(em: EntityManager, filter: UserFilter): Promise<number> {
    return em.count(User, userWhere(filter));
  }

  get(em: EntityManager, id: string): Promise<User> {
    return this.users.getById(em, id);
  }

  /**
   * Updates a user and records it in the audit trail, in one transaction. Disabling a user drops
   * their cached credentials, so every token of theirs is refused from the next request on.
   */
  async update(em: EntityManager, id: string, input: AdminUserUpdate, acting: Acting): Promise<User> {
    const actor = acting.principal.user;
    if (id === actor.id && input.status === 'disabled') {
      throw new TrellisError('forbidden', 'cannot_disable_self', 'You cannot disable your own account.');
    }
    if (id === actor.id && permissionFlags.some((flag) => input[flag] !== undefined)) {
      throw new TrellisError('forbidden', 'cannot_change_own_permissions', 'You cannot change your own permissions; ask another administrator.');
    }
    if (input.isSiteAdmin !== undefined && !actor.isSiteAdmin) throw siteAdminProtected();
    const user = await inTransaction(em, async (tx) => {
      const target = await this.users.getById(tx, id);
      if (target.isSiteAdmin && !actor.isSiteAdmin) throw siteAdminProtected();
      const change: UpdateUserInput = {};
      if (input.username !== undefined) change.name = input.username;
      if (input.email !== undefined) change.email = input.email;
      if (input.phone !== undefined) change.phone = input.phone;
      if (input.status !== undefined) change.status = input.status;
      if (input.profile !== undefined) change.profile = input.profile;
      for (const flag of permissionFlags) if (input[flag] !== undefined) change[flag] = input[flag];
      const updated = await this.users.update(tx, id, change);
      await this.audit.record(
        tx,
        { principal: acting.principal, action: 'admin.user.update', targetType: 'user', targetId: id, data: { fields: Object.keys(input).sort() }, ip: acting.ip, userAgent: acting.userAgent },
        { flush: true },
      );
      return updated;
    });
    // Again after the commit: a request racing the transaction may have cached the old user, and
    // sockets that checked their access against the uncommitted change check again.
    this.authenticator.invalidateUser(id);
    await this.hooks.emit('access.revoked', { kind: 'user', userId: id });
    return user;
  }

  /**
   * A short-lived JWT for the target user that names the administrator as its actor (RFC 8693
   * `act`), written to the audit trail. Refused for oneself, for disabled users, from a token that
   * is itself an impersonation, and for administrators and site administrators.
   */
  async become(em: EntityManager, id: string, acting: Acting): Promise<{ token: string; expiresIn: number; user: User; actorId: string }> {
    const { principal } = acting;
    if (principal.actorId) {
      throw new TrellisError('forbidden', 'nested_become', 'You are already acting as another user; use your own credentials to become someone else.');
    }
    if (id === principal.userId) throw new TrellisError('bad_request', 'cannot_become_self', 'You cannot become yourself.');
    const target = await this.users.getById(em, id);
    if (target.isSiteAdmin || target.isAdministrator) {
      throw new TrellisError('forbidden', 'cannot_become_administrator', 'Administrators and site administrators cannot be impersonated.');
    }
    if (target.status !== 'active') throw new TrellisError('conflict', 'user_disabled', 'The user is disabled; enable the account first.');
    const { token, expiresIn } = await this.jwt.sign(target.id, { actorId: principal.userId, ttlSeconds: this.settings.becomeTtlSeconds });
    await this.audit.record(
      em,
      { principal, action: 'admin.user.become', targetType: 'user', targetId: target.id, data: { expiresIn }, ip: acting.ip, userAgent: acting.userAgent },
      { flush: true },
    );
    return { token, expiresIn, user: target, actorId: principal.userId };
  }
}
