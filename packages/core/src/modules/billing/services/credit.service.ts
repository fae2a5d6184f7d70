import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { hooksServiceIdentifier } from '../../../kernel/tokens.js';
import { paging, type Page, type PageQuery } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Team } from '../../identity/index.js';
import type { BillingConfig } from '../billing.config.js';
import { CreditBalance } from '../entities/credit-balance.entity.js';
import { closeMovement, closePlan } from './credit-close.js';
import { CreditLedgerEntry } from '../entities/credit-ledger-entry.entity.js';
import { CreditReservation } from '../entities/credit-reservation.entity.js';
import { billingErrors, teamGone } from '../errors.js';
import { isUuid } from '../rows.js';
import { billingConfigServiceIdentifier } from '../tokens.js';
import { BillingAccountService } from './billing-account.service.js';
import { CreditLedger, teamIdOf } from './credit-ledger.js';
import { RunAlone } from '../../../kernel/group-commit.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements, RowSink } from '../../../ports/database.js';
import { closeHeldReservation, CreditWriteIncomplete, giveBackAndRecordPg, giveCreditsBack, holdGrantCreditsPg, insertHeldReservation, lockTeamShared, recordLedgerEntry, takeGrantCredits } from '../queries.js';

export interface ReserveInput {
  teamId: string;
  /** Whole credits, at least 1: the most the work may cost. */
  amount: number;
  /** What the credits are for, shown in the ledger ("run 0193...", "document run"). */
  reason: string;
  /** The user the work runs for, when there is one. */
  userId?: string | null;
  /** Seconds until the expiry job releases the reservation (default `billing.reservationTtlSeconds`). */
  ttlSeconds?: number;
  /** The reservation's id, when the caller chose it (a new id otherwise). */
  id?: string;
}

/** A reservation made by `CreditService.hold`. */
export interface CreditHold {
  id: string;
  amount: number;
  grantPart: number;
  purchasePart: number;
}

export interface BalanceSnapshot {
  balance: CreditBalance;
  /** Credits held by open reservations (already taken from the balance). */
  reservedCredits: number;
}

/**
 * Credits for runs: reserve before work starts, then settle with what it used, or release.
 *
 *   const credits = ctx.get(CreditService);
 *   const hold = await credits.reserve(em, { teamId, amount: 50, reason: `run ${runId}` });  // 402 insufficient_credits
 *   try { ...work...; await credits.settle(em, hold.id, used); }
 *   catch (error) { await credits.release(em, hold.id, 'run failed'); throw error; }
 *
 * A reservation takes its credits from the balance at once (grant credits first, then purchased
 * ones) under the balance's row lock, so parallel reservations can never spend more than the
 * team has. Settling gives back what was not used; releasing gives back everything. Grant credits
 * given back after their month ended are not restored (they expired with the month). Each step
 * is a ledger entry. Reservations left open are released by the expiry job after their TTL.
 */
@injectable()
export class CreditService {
  constructor(
    @inject(CreditLedger) private readonly ledger: CreditLedger,
    @inject(BillingAccountService) private readonly accounts: BillingAccountService,
    @inject(billingConfigServiceIdentifier) private readonly config: BillingConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
  ) {}

  /**
   * `reserve` for the run hot path, in the caller's transaction `tx` (no savepoint of its own) and
   * in prepared statements: when the team's grant credits cover `amount` (the common case), one
   * statement takes them under the balance's row lock, then the ledger entry and the reservation
   * are inserted (PostgreSQL first takes the team's share lock, as `reserve` does). Otherwise
   * (purchase credits needed, too few credits, no balance yet) it is `reserve`, which opens a
   * savepoint: with `alone: false` (a concurrent unit of a group commit) it throws `RunAlone`
   * instead, having written nothing. With `rows` (a group commit), the ledger entry and the
   * reservation are inserted with the other rows of the group. Balances, ledger entries and the
   * reservation are the same as `reserve` makes.
   *
   * When it throws a `TrellisError` (402 `insufficient_credits`, no team, invalid amount) nothing
   * was written. Any other error (a driver error, `CreditWriteIncomplete`) may leave part of its
   * writes in `tx`, which the caller must then roll back.
   */
  async hold(tx: EntityManager, input: ReserveInput, options: { alone?: boolean; rows?: RowSink } = {}): Promise<CreditHold> {
    if (!Number.isSafeInteger(input.amount) || input.amount < 1) {
      throw new TrellisError('validation', 'invalid_amount', 'A reservation is a whole number of credits, at least 1.');
    }
    const now = this.clock.now();
    // PostgreSQL takes the team's share lock in the hold's statement.
    if (this.sql.dialect === 'postgresql') return this.holdPg(tx, input, now, options.alone);
    if (!(await lockTeamShared(this.sql, tx, input.teamId))) throw billingErrors.noTeam('The team no longer exists.');
    const after = await takeGrantCredits(this.sql, tx, input.teamId, input.amount, now);
    if (!after) {
      // The general path opens a savepoint: a unit of a group commit must run alone for it.
      if (options.alone === false) throw new RunAlone();
      const reserved = await this.reserve(tx, input);
      return { id: reserved.id, amount: reserved.amount, grantPart: reserved.grantPart, purchasePart: reserved.purchasePart };
    }
    const id = input.id ?? this.ids.next();
    const reason = input.reason.slice(0, 500);
    await recordLedgerEntry(this.sql, tx, {
      id: this.ids.next(),
      teamId: input.teamId,
      kind: 'reservation',
      grantDelta: -input.amount,
      purchaseDelta: 0,
      after,
      reason: `Reserved for ${reason}`,
      reservationId: id,
      createdAt: now,
    }, options.rows);
    await insertHeldReservation(this.sql, tx, {
      id,
      teamId: input.teamId,
      amount: input.amount,
      grantPart: input.amount,
      purchasePart: 0,
      grantPeriodEnd: after.periodEnd,
      reason,
      userId: input.userId ?? null,
      expiresAt: new Date(now.getTime() + (input.ttlSeconds ?? this.config.reservationTtlSeconds) * 1000),
      createdAt: now,
    }, options.rows);
    return { id, amount: input.amount, grantPart: input.amount, purchasePart: 0 };
  }

  /**
   * `hold` on PostgreSQL: the team's share lock, the grant credits, the reservation and its
   * ledger entry in one statement (see `holdGrantCreditsPg`), so the balance's row lock is held
   * from that statement to the commit, not across three round trips. A caller that writes more in
   * `tx` should write it before the hold (the run's record does: see `RunService.start`).
   */
  private async holdPg(tx: EntityManager, input: ReserveInput, now: Date, alone: boolean | undefined): Promise<CreditHold> {
    const id = input.id ?? this.ids.next();
    const taken = await holdGrantCreditsPg(this.sql, tx, {
      reservationId: id,
      ledgerEntryId: this.ids.next(),
      teamId: input.teamId,
      amount: input.amount,
      reason: input.reason,
      userId: input.userId ?? null,
      expiresAt: new Date(now.getTime() + (input.ttlSeconds ?? this.config.reservationTtlSeconds) * 1000),
      now,
    });
    if (taken === 'taken') return { id, amount: input.amount, grantPart: input.amount, purchasePart: 0 };
    if (taken === 'no_team') throw billingErrors.noTeam('The team no longer exists.');
    // Grant credits short, or no balance yet: the general path (a savepoint), with the same id.
    if (alone === false) throw new RunAlone();
    const reserved = await this.reserve(tx, { ...input, id });
    return { id: reserved.id, amount: reserved.amount, grantPart: reserved.grantPart, purchasePart: reserved.purchasePart };
  }

  /**
   * `settleOnly` (or, with `release`, `release` without answering the reservation) for the run hot
   * path, in the caller's transaction `tx` (no savepoint) and in prepared statements: the
   * reservation is closed and read in one statement, the credits given back in another (the
   * balance's row lock and the change), then the ledger entry is inserted (with `rows`, a group
   * commit, with the other rows of the group). Same balances and ledger entries as `settle` and
   * `release`.
   *
   * When it throws a `TrellisError` (reservation missing or closed, more used than reserved)
   * nothing was written. Any other error (a driver error, `CreditWriteIncomplete`) may leave part
   * of its writes in `tx`, which the caller must then roll back.
   */
  async closeOnly(tx: EntityManager, reservationId: string, close: { used: number; release?: boolean; reason?: string }, rows?: RowSink): Promise<void> {
    const status = close.release ? 'released' : 'settled';
    const used = close.release ? 0 : close.used;
    if (!Number.isSafeInteger(used) || used < 0) {
      throw new TrellisError('validation', 'invalid_amount', 'Used credits are a whole number, at least 0.');
    }
    if (!isUuid(reservationId)) throw billingErrors.reservationNotFound();
    const now = this.clock.now();
    const reservation = await closeHeldReservation(this.sql, tx, { id: reservationId, status, used, now });
    if (!reservation) {
      // Nothing was written: tell why as `close` does.
      const current = await tx.findOne(CreditReservation, { id: reservationId }, { refresh: true });
      if (!current) throw billingErrors.reservationNotFound();
      if (current.status !== 'held') throw billingErrors.reservationClosed(current.status);
      throw billingErrors.settleExceedsReservation(used, current.amount);
    }
    // From here on the reservation is closed in `tx`: a failure is not a TrellisError (the caller rolls back).
    const plan = closePlan(reservation, status, used, close.reason);
    if (this.sql.dialect === 'postgresql') {
      // The team's share lock, the balance and its ledger entry in one statement (it throws
      // `CreditWriteIncomplete` when the team is gone), put off to just before the commit
      // (with `rows`, the unit's end): the balance's row lock is then held for the commit only.
      const write = () =>
        giveBackAndRecordPg(this.sql, tx, {
          ledgerEntryId: this.ids.next(),
          reservationId,
          teamId: reservation.teamId,
          kind: plan.kind,
          grantBack: plan.grantBack,
          grantPeriodEnd: reservation.grantPeriodEnd,
          purchaseBack: plan.purchaseBack,
          reasonSameMonth: plan.reasonSameMonth,
          reasonMonthEnded: plan.reasonMonthEnded,
          now,
        });
      if (rows?.atEnd) await rows.atEnd(tx, write);
      else await write();
      return;
    }
    if (!(await lockTeamShared(this.sql, tx, reservation.teamId))) throw new CreditWriteIncomplete('the team of the reservation no longer exists');
    const after = await giveCreditsBack(this.sql, tx, { teamId: reservation.teamId, grantBack: plan.grantBack, grantPeriodEnd: reservation.grantPeriodEnd, purchaseBack: plan.purchaseBack, now });
    if (!after) throw new CreditWriteIncomplete('the credit balance of the reservation\'s team');
    const movement = closeMovement(plan, after.periodEnd.getTime() === reservation.grantPeriodEnd.getTime());
    await recordLedgerEntry(this.sql, tx, { id: this.ids.next(), teamId: reservation.teamId, kind: plan.kind, ...movement, after, reservationId, createdAt: now }, rows);
  }

  /** Holds `amount` credits of a team. 402 `insufficient_credits` (with balance, required, shortfall) when it has fewer. */
  async reserve(em: EntityManager, input: ReserveInput): Promise<CreditReservation> {
    if (!Number.isSafeInteger(input.amount) || input.amount < 1) {
      throw new TrellisError('validation', 'invalid_amount', 'A reservation is a whole number of credits, at least 1.');
    }
    const now = this.clock.now();
    const ttl = input.ttlSeconds ?? this.config.reservationTtlSeconds;
    const hold = () =>
      inTransaction(em, async (tx) => {
        const balance = await this.ledger.tryLock(tx, input.teamId);
        if (!balance) return null;
        const total = balance.grantCredits + balance.purchaseCredits;
        if (input.amount > total) throw billingErrors.insufficientCredits(total, input.amount);
        const grantPart = Math.min(balance.grantCredits, input.amount);
        const purchasePart = input.amount - grantPart;
        const reservation = tx.create(CreditReservation, {
          id: input.id ?? this.ids.next(),
          team: tx.getReference(Team, input.teamId),
          status: 'held',
          amount: input.amount,
          grantPart,
          purchasePart,
          grantPeriodEnd: balance.periodEnd,
          usedCredits: null,
          reason: input.reason.slice(0, 500),
          userId: input.userId ?? null,
          expiresAt: new Date(now.getTime() + ttl * 1000),
          closedAt: null,
          createdAt: now,
          updatedAt: now,
        } as CreditReservation);
        this.ledger.record(
          tx,
          balance,
          { kind: 'reservation', grantDelta: -grantPart, purchaseDelta: -purchasePart, reason: `Reserved for ${input.reason}`, reservationId: reservation.id },
          now,
        );
        return reservation;
      });
    // The team's billing records exist after its first use: create them only when the balance is missing.
    const held = await hold();
    if (held) return held;
    await this.accounts.ensure(em, input.teamId);
    const retried = await hold();
    if (!retried) throw billingErrors.noTeam('The team no longer exists.');
    return retried;
  }

  /** Charges `usedCredits` (0 to the reserved amount) and gives the rest back. 409 when already closed. */
  async settle(em: EntityManager, reservationId: string, usedCredits: number, reason?: string): Promise<CreditReservation> {
    if (!Number.isSafeInteger(usedCredits) || usedCredits < 0) {
      throw new TrellisError('validation', 'invalid_amount', 'Used credits are a whole number, at least 0.');
    }
    return (await this.close(em, reservationId, 'settled', usedCredits, reason, true))!;
  }

  /** `settle` for a caller that does not need the closed reservation back (saves reading it again). */
  async settleOnly(em: EntityManager, reservationId: string, usedCredits: number, reason?: string): Promise<void> {
    if (!Number.isSafeInteger(usedCredits) || usedCredits < 0) {
      throw new TrellisError('validation', 'invalid_amount', 'Used credits are a whole number, at least 0.');
    }
    await this.close(em, reservationId, 'settled', usedCredits, reason, false);
  }

  /** Gives every reserved credit back (the work did not run, failed, or was cancelled). 409 when already closed. */
  async release(em: EntityManager, reservationId: string, reason?: string): Promise<CreditReservation> {
    return (await this.close(em, reservationId, 'released', 0, reason, true))!;
  }

  private async close(em: EntityManager, reservationId: string, status: 'settled' | 'released', used: number, reason: string | undefined, answer: boolean): Promise<CreditReservation | null> {
    let charged: { teamId: string; totalCredits: number } | undefined;
    const closed = await this.closeInTransaction(em, reservationId, status, used, reason, answer, (teamId, totalCredits) => (charged = { teamId, totalCredits }));
    // A charge that took the balance below the threshold, once committed (the credits it used
    // were on the balance before it).
    const threshold = this.config.creditLowThreshold ?? 0;
    if (charged && used > 0 && charged.totalCredits < threshold && charged.totalCredits + used >= threshold) {
      await this.hooks.emit('billing.credits_low', { teamId: charged.teamId, totalCredits: charged.totalCredits, threshold });
    }
    return closed;
  }

  private async closeInTransaction(
    em: EntityManager,
    reservationId: string,
    status: 'settled' | 'released',
    used: number,
    reason: string | undefined,
    answer: boolean,
    after: (teamId: string, totalCredits: number) => void,
  ): Promise<CreditReservation | null> {
    const now = this.clock.now();
    return inTransaction(em, async (tx) => {
      const reservation = isUuid(reservationId) ? await tx.findOne(CreditReservation, { id: reservationId }, { refresh: true }) : null;
      if (!reservation) throw billingErrors.reservationNotFound();
      if (reservation.status !== 'held') throw billingErrors.reservationClosed(reservation.status);
      if (used > reservation.amount) throw billingErrors.settleExceedsReservation(used, reservation.amount);
      const closed = await tx.nativeUpdate(
        CreditReservation,
        { id: reservationId, status: 'held' },
        { status, usedCredits: used, closedAt: now, updatedAt: now },
      );
      if (!closed) {
        const current = await tx.findOneOrFail(CreditReservation, { id: reservationId }, { refresh: true });
        throw billingErrors.reservationClosed(current.status);
      }
      const balance = await this.ledger.tryLock(tx, teamIdOf(reservation));
      // The team was deleted meanwhile.
      if (!balance) throw billingErrors.noTeam('The team no longer exists.');
      const plan = closePlan(reservation, status, used, reason);
      const movement = closeMovement(plan, balance.periodEnd.getTime() === reservation.grantPeriodEnd.getTime());
      this.ledger.record(tx, balance, { kind: plan.kind, ...movement, reservationId }, now);
      after(teamIdOf(reservation), balance.grantCredits + balance.purchaseCredits);
      return answer ? tx.findOneOrFail(CreditReservation, { id: reservationId }, { refresh: true }) : null;
    });
  }

  /** A reservation, for the API (membership is checked by the caller). */
  async get(em: EntityManager, reservationId: string): Promise<CreditReservation | null> {
    return isUuid(reservationId) ? em.findOne(CreditReservation, { id: reservationId }) : null;
  }

  /** Open reservations past their TTL, oldest first. */
  async dueForExpiry(em: EntityManager, limit: number): Promise<string[]> {
    const rows = await em.find(CreditReservation, { status: 'held', expiresAt: { $lte: this.clock.now() } }, { fields: ['id'], orderBy: { expiresAt: 'asc' }, limit });
    return rows.map((row) => row.id);
  }

  /** Releases a reservation whose TTL passed (false when it was closed meanwhile). */
  async expire(em: EntityManager, reservationId: string): Promise<boolean> {
    try {
      await this.release(em, reservationId, 'not settled in time, released by the expiry job');
      return true;
    } catch (error) {
      if (error instanceof TrellisError && error.code === 'RESERVATION_CLOSED') return false;
      throw error;
    }
  }

  /** The team's balance (creating the team's billing records on first use). */
  async balance(em: EntityManager, teamId: string): Promise<BalanceSnapshot> {
    await this.accounts.ensure(em, teamId);
    // Gone when the team was deleted after `ensure`.
    const balance = await em.findOneOrFail(CreditBalance, { team: teamId }, { refresh: true, failHandler: teamGone });
    const held = await em.find(CreditReservation, { team: teamId, status: 'held' }, { fields: ['amount'] });
    return { balance, reservedCredits: held.reduce((sum, r) => sum + r.amount, 0) };
  }

  /** The team's ledger, newest first. */
  async ledgerPage(em: EntityManager, teamId: string, query: PageQuery): Promise<Page<CreditLedgerEntry>> {
    const p = paging(query);
    const [items, total] = await em.findAndCount(CreditLedgerEntry, { team: teamId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: p.size, offset: p.offset });
    return { items, total, page: p.page, size: p.size };
  }
}
