import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Team, type TeamRole, TeamService } from '../../identity/index.js';
import { CreditBalance } from '../entities/credit-balance.entity.js';
import { Subscription } from '../entities/subscription.entity.js';
import { billingErrors } from '../errors.js';
import { addMonths } from '../periods.js';
import { isUuid } from '../rows.js';
import { CreditLedger } from './credit-ledger.js';
import { PlanCatalog } from './plan-catalog.js';
import { inTransaction } from '../../../kernel/transaction.js';

const managers: readonly TeamRole[] = ['owner', 'admin'];

/**
 * Who may touch a team's billing, and the moment a team gets its billing records: the first time
 * billing sees the team (a read, a plan change, a reservation), it is put on the fallback plan
 * with a fresh credit month, in one transaction. Creating it twice at once is harmless: the unique
 * team column lets one insert win and the other simply reads the winner's records.
 */
@injectable()
export class BillingAccountService {
  constructor(
    @inject(TeamService) private readonly teams: TeamService,
    @inject(PlanCatalog) private readonly plans: PlanCatalog,
    @inject(CreditLedger) private readonly ledger: CreditLedger,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  /**
   * The team a billing call is about: `teamId`, or the caller's first team when it is omitted.
   * 400 NO_TEAM when the caller is in no team or not in this one; 403 FORBIDDEN when `manage`
   * is asked and the caller is a plain member.
   */
  async resolveTeam(em: EntityManager, userId: string, teamId: string | undefined, access: 'member' | 'manage'): Promise<string> {
    let role: TeamRole;
    if (teamId === undefined || teamId === '') {
      const first = await this.teams.firstTeam(em, userId);
      if (!first) throw billingErrors.noTeam('You are not a member of any team.');
      teamId = first.team.id;
      role = first.role;
    } else {
      const membership = isUuid(teamId) ? await this.teams.membership(em, teamId, userId) : null;
      if (!membership) throw billingErrors.noTeam('You are not a member of the given team.');
      role = membership.role;
    }
    if (access === 'manage' && !managers.includes(role)) throw billingErrors.forbidden();
    return teamId;
  }

  /** Creates the team's subscription (fallback plan) and balance (first monthly grant) unless they exist. */
  async ensure(em: EntityManager, teamId: string): Promise<void> {
    if (await em.count(Subscription, { team: teamId })) return;
    const now = this.clock.now();
    const plan = this.plans.fallback;
    const end = addMonths(now, 1);
    try {
      await inTransaction(em, async (tx) => {
        const team = tx.getReference(Team, teamId);
        tx.create(Subscription, {
          id: this.ids.next(),
          team,
          planCode: plan.code,
          billingPeriod: 'monthly',
          status: 'active',
          monthlyCredits: plan.monthlyCredits,
          anchorAt: now,
          currentPeriodStart: now,
          currentPeriodEnd: end,
          cancelAtPeriodEnd: false,
          canceledAt: null,
          scheduledPlanCode: null,
          scheduledBillingPeriod: null,
          version: 1,
          createdAt: now,
          updatedAt: now,
        } as Subscription);
        const balance = tx.create(CreditBalance, {
          id: this.ids.next(),
          team,
          grantCredits: 0,
          purchaseCredits: 0,
          periodStart: now,
          periodEnd: end,
          periodGrantedCredits: 0,
          version: 1,
          createdAt: now,
          updatedAt: now,
        } as CreditBalance);
        this.ledger.startPeriod(
          tx,
          balance,
          { start: now, end, credits: plan.monthlyCredits, reason: `${plan.name} plan: monthly credits`, uniqueKey: `grant:${teamId}:${now.toISOString()}` },
          now,
        );
      });
    } catch (error) {
      // Another request created them first.
      if (error instanceof UniqueConstraintViolationException) return;
      // The team was deleted after the caller's membership check.
      if (error instanceof ForeignKeyConstraintViolationException) throw billingErrors.noTeam('The team no longer exists.');
      throw error;
    }
  }
}
