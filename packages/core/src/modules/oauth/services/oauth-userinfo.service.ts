import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Principal } from '../../../kernel/auth/principal.js';
import { loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { TeamMember, User } from '../../identity/index.js';
import { InvalidToken } from '../oauth-errors.js';
import type { UserInfo } from '../schemas.js';

/** GET /oauth/userinfo. */
@injectable()
export class OAuthUserInfoService {
  private readonly log: Logger;

  constructor(@inject(loggerServiceIdentifier) log: Logger) {
    this.log = log.child({ module: 'oauth' });
  }

  async userInfo(em: EntityManager, principal: Principal): Promise<UserInfo> {
    const user = await em.findOne(User, { id: principal.userId });
    if (!user || user.status !== 'active') throw new InvalidToken('The token belongs to no active user.');
    return {
      sub: user.id,
      email: user.email,
      name: user.name,
      avatar_url: user.avatarUrl,
      scope: (principal.scopes ?? []).join(' '),
      is_site_admin: user.isSiteAdmin,
      is_real_team_admin: await this.isRealTeamAdmin(em, user.id),
    };
  }

  /**
   * The spec: true when the user is owner or admin of at least one team with 2 or more members;
   * the one-person personal team does not count; false when the lookup fails.
   */
  async isRealTeamAdmin(em: EntityManager, userId: string): Promise<boolean> {
    try {
      const managed = await em.find(TeamMember, { user: userId, role: { $in: ['owner', 'admin'] }, team: { personal: false } }, { populate: ['team'] });
      for (const membership of managed) {
        if ((await em.count(TeamMember, { team: membership.team.id })) >= 2) return true;
      }
      return false;
    } catch (error) {
      this.log.warn({ err: error, userId }, 'is_real_team_admin lookup failed; answering false');
      return false;
    }
  }
}
