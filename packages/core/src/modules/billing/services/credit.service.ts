import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { hooksServiceIdentifier } from '../../../kernel/tokens.js';
import { paging, type Page, type PageQuery } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import type { BillingConfig } from '../billing.config.js';
import { CreditBalance } from '../entities/credit-balance.entity.js';
import { closeMovement, closePlan } from './credit-close.js';
import { CreditLedgerEntry } from '../entities/credit-ledger-entry.entity.js';
import { CreditReservation } from '../entities/credit-reservation.entity.js';
import { billingErrors, teamGone } from '../errors.js';
import { isUuid } from '../rows.js';
import { billingConfigServiceIdentifier } from '../tokens.js';
import { BillingAccountService } from './billing-account.service.js';
import { RunAlone } from '../../../kernel/group-commit.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements, RowSink } from '../../../ports/database.js';
import { closeHeldReservation, CreditWriteIncomplete, giveBackAndRecordPg, giveCreditsBack, holdGrantCreditsPg, insertHeldReservation, lockBalance, lockTeamShared, recordLedgerEntry, takeCreditParts, takeGrantCredits, type BalanceAfter } from '../queries.js';

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
    @inject(BillingAccountService) private readonly accounts: BillingAccountService,
    @inject(billingConfigServiceIdentifier) private readonly config: BillingConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
  ) {}

  /**
   * Holds `amount` credits of a team in the caller's transaction `tx` (no savepoint of its own, in
   * prepared statements): the one implementation of taking credits, which `reserve` (the billing
   * API, bots) and the run and conversation paths all use. When the team's grant credits cover
   * `amount` (the common case), one statement takes them under the balance's row lock (on
   * PostgreSQL with the team's share lock, the reservation and its ledger entry in the same
   * statement); otherwise the balance is read under its row lock and grant credits are taken first,
   * then purchased ones. The team's billing records are created on its first use: that opens a
   * savepoint, so with `alone: false` (a concurrent unit of a group commit) it throws `RunAlone`
   * instead, having written nothing. With `rows` (a group commit), the ledger entry and the
   * reservation are inserted with the other rows of the group. With `lockFirst`, the balance's row
   * lock is taken before the ledger entry gets its id (`reserve`): on PostgreSQL the one-statement
   * path chooses the id before the lock, so entries of parallel holds may then list in another
   * order than the one they changed the balance in (each entry's balance after it stays exact).
   *
   * When it throws a `TrellisError` (402 `insufficient_credits`, no team, invalid amount) nothing
   * was written. Any other error (a driver error, `CreditWriteIncomplete`) may leave part of its
   * writes in `tx`, which the caller must then roll back.
   */
  async hold(tx: EntityManager, input: ReserveInput, options: { alone?: boolean; rows?: RowSink; lockFirst?: boolean } = {}): Promise<CreditHold> {
    if (!Number.isSafeInteger(input.amount) || input.amount < 1) {
      throw new TrellisError('validation', 'invalid_amount', 'A reservation is a whole number of credits, at least 1.');
    }
    const now = this.clock.now();
    const id = input.id ?? this.ids.next();
    const expiresAt = new Date(now.getTime() + (input.ttlSeconds ?? this.config.reservationTtlSeconds) * 1000);
    // With `lockFirst`, the general path: the balance's row lock first, then the ledger entry's id
    // and time, so entries of parallel holds sort (by id, as the ledger lists them) in the order
    // they changed the balance.
    if (!options.lockFirst) {
      const taken = await this.holdFromGrant(tx, input, { id, expiresAt, now }, options.rows);
      if (taken) return taken;
    }
    return this.holdFromAny(tx, input, { id, expiresAt, now }, options);
  }

  /** `hold`'s one statement when the grant credits cover the amount; null when they do not (nothing written). */
  private async holdFromGrant(tx: EntityManager, input: ReserveInput, at: { id: string; expiresAt: Date; now: Date }, rows?: RowSink): Promise<CreditHold | null> {
    const { id, expiresAt, now } = at;
    if (this.sql.dialect === 'postgresql') {
      // The team's share lock, the grant credits, the reservation and its ledger entry in one
      // statement (see `holdGrantCreditsPg`), so the balance's row lock is held from that
      // statement to the commit, not across round trips. A caller that writes more in `tx` should
      // write it before the hold (a run's record does: see `PgRunStore` in @trellis/db-postgres).
      const taken = await holdGrantCreditsPg(this.sql, tx, { reservationId: id, ledgerEntryId: this.ids.next(), teamId: input.teamId, amount: input.amount, reason: input.reason, userId: input.userId ?? null, expiresAt, now });
      if (taken === 'no_team') throw billingErrors.noTeam('The team no longer exists.');
      return taken === 'taken' ? { id, amount: input.amount, grantPart: input.amount, purchasePart: 0 } : null;
    }
    const after = await takeGrantCredits(this.sql, tx, input.teamId, input.amount, now);
    return after ? this.recordHold(tx, input, { id, grantPart: input.amount, purchasePart: 0, after, expiresAt, now }, rows) : null;
  }

  /** `hold` when the grant credits alone do not cover the amount (or the team has no balance yet). */
  private async holdFromAny(tx: EntityManager, input: ReserveInput, at: { id: string; expiresAt: Date; now: Date }, options: { alone?: boolean; rows?: RowSink }): Promise<CreditHold> {
    if (!(await lockTeamShared(this.sql, tx, input.teamId))) throw billingErrors.noTeam('The team no longer exists.');
    let balance = await lockBalance(this.sql, tx, input.teamId);
    if (!balance) {
      // The team's billing records exist after its first use: created here (a savepoint).
      if (options.alone === false) throw new RunAlone();
      await this.accounts.ensure(tx, input.teamId);
      balance = await lockBalance(this.sql, tx, input.teamId);
      if (!balance) throw billingErrors.noTeam('The team no longer exists.');
    }
    at.now = this.clock.now();
    const total = balance.grantCredits + balance.purchaseCredits;
    if (input.amount > total) throw billingErrors.insufficientCredits(total, input.amount);
    const grantPart = Math.min(balance.grantCredits, input.amount);
    const purchasePart = input.amount - grantPart;
    const after = await takeCreditParts(this.sql, tx, input.teamId, grantPart, purchasePart, at.now);
    // The balance was read under its row lock (SQLite: the one writer), so it still holds both parts.
    if (!after) throw new CreditWriteIncomplete('the credit balance changed under its row lock');
    return this.recordHold(tx, input, { ...at, grantPart, purchasePart, after }, options.rows);
  }

  /** The reservation of credits taken from the balance, and its ledger entry. */
  private async recordHold(
    tx: EntityManager,
    input: ReserveInput,
    held: { id: string; grantPart: number; purchasePart: number; after: BalanceAfter; expiresAt: Date; now: Date },
    rows?: RowSink,
  ): Promise<CreditHold> {
    const reason = input.reason.slice(0, 500);
    await recordLedgerEntry(this.sql, tx, {
      id: this.ids.next(),
      teamId: input.teamId,
      kind: 'reservation',
      grantDelta: -held.grantPart,
      purchaseDelta: -held.purchasePart,
      after: held.after,
      reason: `Reserved for ${reason}`,
      reservationId: held.id,
      createdAt: held.now,
    }, rows);
    await insertHeldReservation(this.sql, tx, {
      id: held.id,
      teamId: input.teamId,
      amount: input.amount,
      grantPart: held.grantPart,
      purchasePart: held.purchasePart,
      grantPeriodEnd: held.after.periodEnd,
      reason,
      userId: input.userId ?? null,
      expiresAt: held.expiresAt,
      createdAt: held.now,
    }, rows);
    return { id: held.id, amount: input.amount, grantPart: held.grantPart, purchasePart: held.purchasePart };
  }

  /**
   * Closes a held reservation (`settle`, or with `release`, `release`) in the caller's transaction
   * `tx` (no savepoint, in prepared statements): the one implementation of closing, which `settle`,
   * `release`, the expiry job and the run and conversation paths all use. The reservation is
   * closed and read in one statement, the credits given back in another (the balance's row lock and
   * the change), then the ledger entry is inserted (with `rows`, a group commit, with the other rows
   * of the group). Answers the team and its credits after it (the total is unknown when `rows` puts
   * the PostgreSQL write off to the unit's end).
   *
   * When it throws a `TrellisError` (reservation missing or closed, more used than reserved)
   * nothing was written. Any other error (a driver error, `CreditWriteIncomplete`) may leave part
   * of its writes in `tx`, which the caller must then roll back.
   */
  async closeOnly(tx: EntityManager, reservationId: string, close: { used: number; release?: boolean; reason?: string; lockFirst?: boolean }, rows?: RowSink): Promise<{ teamId: string; totalCredits: number | null }> {
    const status = close.release ? 'released' : 'settled';
    const used = close.release ? 0 : close.used;
    if (!Number.isSafeInteger(used) || used < 0) {
      throw new TrellisError('validation', 'invalid_amount', 'Used credits are a whole number, at least 0.');
    }
    if (!isUuid(reservationId)) throw billingErrors.reservationNotFound();
    const now = this.clock.now();
    const reservation = await closeHeldReservation(this.sql, tx, { id: reservationId, status, used, now });
    if (!reservation) {
      // Nothing was written: tell why.
      const current = await tx.findOne(CreditReservation, { id: reservationId }, { refresh: true });
      if (!current) throw billingErrors.reservationNotFound();
      if (current.status !== 'held') throw billingErrors.reservationClosed(current.status);
      throw billingErrors.settleExceedsReservation(used, current.amount);
    }
    // From here on the reservation is closed in `tx`: a failure is not a TrellisError (the caller rolls back).
    const plan = closePlan(reservation, status, used, close.reason);
    // With `lockFirst` (`settle`, `release`), the balance's row lock is taken before the ledger
    // entry gets its id, as `hold` does for `reserve`.
    if (this.sql.dialect === 'postgresql' && !close.lockFirst) {
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
      if (rows?.atEnd) {
        await rows.atEnd(tx, async () => void (await write()));
        return { teamId: reservation.teamId, totalCredits: null };
      }
      return { teamId: reservation.teamId, totalCredits: await write() };
    }
    if (!(await lockTeamShared(this.sql, tx, reservation.teamId))) throw new CreditWriteIncomplete('the team of the reservation no longer exists');
    const after = await giveCreditsBack(this.sql, tx, { teamId: reservation.teamId, grantBack: plan.grantBack, grantPeriodEnd: reservation.grantPeriodEnd, purchaseBack: plan.purchaseBack, now });
    if (!after) throw new CreditWriteIncomplete('the credit balance of the reservation\'s team');
    const movement = closeMovement(plan, after.periodEnd.getTime() === reservation.grantPeriodEnd.getTime());
    await recordLedgerEntry(this.sql, tx, { id: this.ids.next(), teamId: reservation.teamId, kind: plan.kind, ...movement, after, reservationId, createdAt: now }, rows);
    return { teamId: reservation.teamId, totalCredits: after.grantCredits + after.purchaseCredits };
  }

  /** Holds `amount` credits of a team (`hold` in a transaction of its own). 402 `insufficient_credits` (with balance, required, shortfall) when it has fewer. */
  async reserve(em: EntityManager, input: ReserveInput): Promise<CreditReservation> {
    const held = await this.inOwnTransaction(em, (tx) => this.hold(tx, input, { lockFirst: true }));
    return em.findOneOrFail(CreditReservation, { id: held.id }, { refresh: true });
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
    const closed = await this.inOwnTransaction(em, (tx) => this.closeOnly(tx, reservationId, { used, release: status === 'released', reason, lockFirst: true }));
    // A charge that took the balance below the threshold, once committed (the credits it used
    // were on the balance before it).
    const threshold = this.config.creditLowThreshold ?? 0;
    if (used > 0 && closed.totalCredits !== null && closed.totalCredits < threshold && closed.totalCredits + used >= threshold) {
      await this.hooks.emit('billing.credits_low', { teamId: closed.teamId, totalCredits: closed.totalCredits, threshold });
    }
    return answer ? em.findOneOrFail(CreditReservation, { id: reservationId }, { refresh: true }) : null;
  }

  /**
   * `work` in a transaction of its own (a savepoint inside the caller's). A credit write that found
   * the team's rows gone meanwhile (`CreditWriteIncomplete`: the team was deleted) answers as the
   * API does for a team that no longer exists.
   */
  private async inOwnTransaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await inTransaction(em, work);
    } catch (error) {
      if (error instanceof CreditWriteIncomplete) throw billingErrors.noTeam('The team no longer exists.');
      throw error;
    }
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
