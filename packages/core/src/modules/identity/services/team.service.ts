import { type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import { configServiceIdentifier, hooksServiceIdentifier } from '../../../kernel/tokens.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { findTeamsOfUser } from '../queries.js';
import type { TeamView } from '../schemas.js';
import { Team, TeamMember, type TeamRole } from '../entities/team.entity.js';
import { User } from '../entities/user.entity.js';
import { normaliseEmail } from './user.service.js';
import { inTransaction } from '../../../kernel/transaction.js';

const managers: readonly TeamRole[] = ['owner', 'admin'];

/** Users whose teams the cache of `teamsOf` holds at most. */
const MAX_CACHED_USERS = 10_000;

@injectable()
export class TeamService {
  /** `teamsOf`'s answers per user, kept `auth.principalCacheTtlMs` (as the principal is). */
  private readonly teamsCache = new Map<string, { teams: readonly TeamView[]; expiresAtMs: number }>();
  /** Moves on at every drop from the cache: a read that started before a drop is not kept. */
  private teamsGeneration = 0;
  private readonly teamsTtlMs: number;

  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(configServiceIdentifier) config: TrellisConfig,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {
    this.teamsTtlMs = config.auth.principalCacheTtlMs;
  }

  /**
   * The user's teams with the user's role in each, as views, in the order of `listForUser`: what
   * `GET /auth/me` lists. One prepared statement, cached in process for `auth.principalCacheTtlMs`
   * (0: not cached). Membership changes made through this service drop the entries concerned at
   * once in this process; other processes see them when their entry expires (at most the TTL).
   */
  async teamsOf(userId: string): Promise<readonly TeamView[]> {
    if (this.teamsTtlMs <= 0) return findTeamsOfUser(this.sql, userId);
    const cached = this.teamsCache.get(userId);
    const now = Date.now();
    if (cached && cached.expiresAtMs > now) return cached.teams;
    const generation = this.teamsGeneration;
    const teams = await findTeamsOfUser(this.sql, userId);
    if (generation === this.teamsGeneration) {
      this.teamsCache.delete(userId);
      if (this.teamsCache.size >= MAX_CACHED_USERS) this.teamsCache.delete(this.teamsCache.keys().next().value!);
      this.teamsCache.set(userId, { teams, expiresAtMs: now + this.teamsTtlMs });
    }
    return teams;
  }

  /** The id of the user's first team (`firstTeam`'s), in one prepared read, not cached. Null: in no team. */
  async firstTeamId(userId: string): Promise<string | null> {
    return (await findTeamsOfUser(this.sql, userId))[0]?.id ?? null;
  }

  /** Drops the cached teams of these users (a membership of theirs changed). */
  private forgetTeamsOf(...userIds: string[]): void {
    this.teamsGeneration++;
    for (const userId of userIds) this.teamsCache.delete(userId);
  }

  /** Drops the cached teams of every user who is (or was, before a change) in this team. */
  private forgetTeam(teamId: string): void {
    this.teamsGeneration++;
    for (const [userId, entry] of this.teamsCache) {
      if (entry.teams.some((team) => team.id === teamId)) this.teamsCache.delete(userId);
    }
  }

  /** The caller's memberships, personal team first, then by creation. */
  async listForUser(em: EntityManager, userId: string): Promise<TeamMember[]> {
    const memberships = await em.find(TeamMember, { user: userId }, { populate: ['team'] });
    return memberships.sort((a, b) => Number(b.team.personal) - Number(a.team.personal) || a.team.createdAt.getTime() - b.team.createdAt.getTime() || a.team.id.localeCompare(b.team.id));
  }

  /** The caller's first team: the personal team when there is one. */
  async firstTeam(em: EntityManager, userId: string): Promise<TeamMember | null> {
    return (await this.listForUser(em, userId))[0] ?? null;
  }

  async membership(em: EntityManager, teamId: string, userId: string): Promise<TeamMember | null> {
    return em.findOne(TeamMember, { team: teamId, user: userId }, { populate: ['team'] });
  }

  /** The membership, or 404 (an outsider cannot tell a team it is not in from a missing one). */
  async requireMember(em: EntityManager, teamId: string, userId: string): Promise<TeamMember> {
    const membership = await this.membership(em, teamId, userId);
    if (!membership) throw new TrellisError('not_found', 'team_not_found', 'No such team, or you are not a member.');
    return membership;
  }

  async requireManager(em: EntityManager, teamId: string, userId: string): Promise<TeamMember> {
    const membership = await this.requireMember(em, teamId, userId);
    if (!managers.includes(membership.role)) throw new TrellisError('forbidden', 'team_role_required', 'This needs the team role owner or admin.');
    return membership;
  }

  async create(em: EntityManager, ownerId: string, name: string): Promise<TeamMember> {
    const membership = await inTransaction(em, async (tx) => {
      const team = tx.create(Team, { id: this.ids.next(), name: name.trim(), personal: false } as Team);
      const owner = tx.getReference(User, ownerId);
      return tx.create(TeamMember, { id: this.ids.next(), team, user: owner, role: 'owner' } as TeamMember);
    });
    this.forgetTeamsOf(ownerId);
    return membership;
  }

  async rename(em: EntityManager, teamId: string, actorId: string, name: string): Promise<TeamMember> {
    const membership = await this.requireManager(em, teamId, actorId);
    membership.team.name = name.trim();
    await em.flush();
    this.forgetTeam(teamId);
    return membership;
  }

  async delete(em: EntityManager, teamId: string, actorId: string): Promise<void> {
    const membership = await this.requireMember(em, teamId, actorId);
    if (membership.role !== 'owner') throw new TrellisError('forbidden', 'team_role_required', 'Only the owner can delete a team.');
    if (membership.team.personal) throw new TrellisError('conflict', 'personal_team', 'A personal team cannot be deleted.');
    // A soft delete: the members go, and with them every way in; modules remove what the team
    // owned (`team.deleting`, in this transaction: projects and their documents), while the row
    // stays for the records that must outlive it (billing: orders, ledger, subscription, balance).
    await inTransaction(em, async (tx) => {
      const count = await tx.nativeUpdate(Team, { id: teamId, deletedAt: null }, { deletedAt: new Date() });
      if (count === 0) throw new TrellisError('not_found', 'team_not_found', 'No such team, or you are not a member.');
      await tx.nativeDelete(TeamMember, { team: teamId });
      await this.hooks.emit('team.deleting', { teamId, em: tx });
    });
    this.forgetTeam(teamId);
    await this.hooks.emit('access.revoked', { kind: 'team', teamId });
  }

  async members(em: EntityManager, teamId: string, actorId: string): Promise<TeamMember[]> {
    await this.requireMember(em, teamId, actorId);
    const list = await em.find(TeamMember, { team: teamId }, { populate: ['user'], orderBy: { createdAt: 'asc', id: 'asc' } });
    return list;
  }

  async addMember(em: EntityManager, teamId: string, actorId: string, email: string, role: TeamRole): Promise<TeamMember> {
    const actor = await this.requireManager(em, teamId, actorId);
    if (actor.team.personal) throw new TrellisError('conflict', 'personal_team', 'A personal team has exactly one member; create a team to work with others.');
    if (role === 'owner') throw new TrellisError('validation', 'invalid_role', 'A team has one owner; add the member as admin or member.');
    const user = await em.findOne(User, { email: normaliseEmail(email) });
    if (!user) throw new TrellisError('not_found', 'user_not_found', `No user has the email ${normaliseEmail(email)}.`);
    if (await em.count(TeamMember, { team: teamId, user: user.id })) throw new TrellisError('conflict', 'already_member', 'That user is already a member of the team.');
    const member = em.create(TeamMember, { id: this.ids.next(), team: actor.team, user, role } as TeamMember);
    await em.flush();
    this.forgetTeamsOf(user.id);
    return member;
  }

  async changeRole(em: EntityManager, teamId: string, actorId: string, userId: string, role: TeamRole): Promise<TeamMember> {
    const actor = await this.requireManager(em, teamId, actorId);
    const target = await em.findOne(TeamMember, { team: teamId, user: userId }, { populate: ['user'] });
    if (!target) throw new TrellisError('not_found', 'member_not_found', 'That user is not a member of the team.');
    if (target.role === 'owner' || role === 'owner') {
      if (actor.role !== 'owner') throw new TrellisError('forbidden', 'team_role_required', 'Only the owner can transfer ownership.');
      if (role === 'owner' && target.id !== actor.id) {
        // Transfer: the previous owner becomes an admin, so the team keeps exactly one owner.
        actor.role = 'admin';
        target.role = 'owner';
        await em.flush();
        this.forgetTeamsOf(actor.user.id as string, userId);
        await this.hooks.emit('access.revoked', { kind: 'team', teamId, userId: actor.user.id as string });
        return target;
      }
      if (target.role === 'owner' && role !== 'owner') throw new TrellisError('conflict', 'last_owner', 'Transfer ownership to another member first.');
    }
    target.role = role;
    await em.flush();
    this.forgetTeamsOf(userId);
    await this.hooks.emit('access.revoked', { kind: 'team', teamId, userId });
    return target;
  }

  async removeMember(em: EntityManager, teamId: string, actorId: string, userId: string): Promise<void> {
    const actor = await this.requireMember(em, teamId, actorId);
    const leaving = userId === actorId;
    if (!leaving && !managers.includes(actor.role)) throw new TrellisError('forbidden', 'team_role_required', 'This needs the team role owner or admin.');
    const target = leaving ? actor : await em.findOne(TeamMember, { team: teamId, user: userId });
    if (!target) throw new TrellisError('not_found', 'member_not_found', 'That user is not a member of the team.');
    if (target.role === 'owner') throw new TrellisError('conflict', 'last_owner', 'The owner cannot leave; transfer ownership or delete the team.');
    if (target.role === 'admin' && actor.role !== 'owner' && !leaving) throw new TrellisError('forbidden', 'team_role_required', 'Only the owner can remove an admin.');
    await em.removeAndFlush(target);
    this.forgetTeamsOf(userId);
    await this.hooks.emit('access.revoked', { kind: 'team', teamId, userId });
  }
}

declare module '../../../kernel/hooks.js' {
  interface TrellisHooks {
    /**
     * A team is being deleted, inside the deleting transaction (`em`): remove what the team owns.
     * A throwing handler rolls the deletion back. The team row stays (soft delete).
     */
    'team.deleting': { teamId: string; em: EntityManager };
  }
}
