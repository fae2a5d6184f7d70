import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { dialectOf } from '../../../kernel/dialect.js';
import { TrellisError } from '../../../kernel/errors.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Team } from '../../identity/index.js';
import { CreditBalance } from '../entities/credit-balance.entity.js';
import { CreditLedgerEntry, type LedgerKind } from '../entities/credit-ledger-entry.entity.js';
import { billingErrors } from '../errors.js';
import { lockRow, lockTeam } from '../rows.js';

export interface Movement {
  kind: LedgerKind;
  grantDelta: number;
  purchaseDelta: number;
  /** Why, in words a team member understands. */
  reason: string;
  reservationId?: string | null;
  orderId?: string | null;
  /** When set, the movement happens at most once (a second attempt fails the transaction). */
  uniqueKey?: string | null;
}

export interface CreditPeriod {
  start: Date;
  end: Date;
  credits: number;
  reason: string;
  /** Makes the grant happen once: `grant:<team>:<month start>` for calendar months, `grant:order:<id>` for a paid plan. */
  uniqueKey: string;
}

/**
 * The only code that changes a balance. Each change is a ledger entry written in the same
 * transaction, so a balance always equals the sum of its entries. Callers lock the balance first
 * (`lock`) and run inside `inTransaction`.
 */
@injectable()
export class CreditLedger {
  constructor(@inject(idsServiceIdentifier) private readonly ids: Ids) {}

  /** The team's balance with its write lock held until the transaction ends. */
  async lock(tx: EntityManager, teamId: string): Promise<CreditBalance> {
    await lockTeam(tx, teamId);
    const balance = await lockRow(tx, CreditBalance, { team: teamId });
    // The team was deleted between the caller's membership check and this transaction.
    if (!balance) throw billingErrors.noTeam('The team no longer exists.');
    return balance;
  }

  /**
   * `lock`, or null when the team has no balance (yet, or any more: its billing records are
   * created on first use and go with the team). The team's share lock is only taken on
   * PostgreSQL: SQLite has one writer, so a deletion of the team cannot interleave.
   */
  async tryLock(tx: EntityManager, teamId: string): Promise<CreditBalance | null> {
    if (dialectOf(tx) === 'postgresql') await lockTeam(tx, teamId);
    return lockRow(tx, CreditBalance, { team: teamId });
  }

  /** Applies one movement to a locked balance and appends its entry. Never lets a bucket go below 0. */
  record(tx: EntityManager, balance: CreditBalance, movement: Movement, now: Date): CreditLedgerEntry {
    const grant = balance.grantCredits + movement.grantDelta;
    const purchase = balance.purchaseCredits + movement.purchaseDelta;
    if (grant < 0 || purchase < 0) {
      throw new TrellisError('internal', 'internal_error', `A ${movement.kind} would take a credit balance below zero.`);
    }
    balance.grantCredits = grant;
    balance.purchaseCredits = purchase;
    balance.updatedAt = now;
    return tx.create(CreditLedgerEntry, {
      id: this.ids.next(),
      team: tx.getReference(Team, teamIdOf(balance)),
      kind: movement.kind,
      grantDelta: movement.grantDelta,
      purchaseDelta: movement.purchaseDelta,
      grantAfter: grant,
      purchaseAfter: purchase,
      reason: movement.reason.slice(0, 500),
      reservationId: movement.reservationId ?? null,
      orderId: movement.orderId ?? null,
      uniqueKey: movement.uniqueKey ?? null,
      createdAt: now,
    } as CreditLedgerEntry);
  }

  /**
   * Starts a credit month on a locked balance: grant credits left from the previous month expire,
   * then `credits` are granted. Purchased credits are untouched. The grant carries the period's
   * unique key, so a period is never granted twice.
   */
  startPeriod(tx: EntityManager, balance: CreditBalance, period: CreditPeriod, now: Date): void {
    if (balance.grantCredits > 0) {
      this.record(
        tx,
        balance,
        { kind: 'expiry', grantDelta: -balance.grantCredits, purchaseDelta: 0, reason: `Unused plan credits of the month ending ${balance.periodEnd.toISOString()} expired` },
        now,
      );
    }
    balance.periodStart = period.start;
    balance.periodEnd = period.end;
    balance.periodGrantedCredits = period.credits;
    this.record(
      tx,
      balance,
      {
        kind: 'grant',
        grantDelta: period.credits,
        purchaseDelta: 0,
        reason: period.reason,
        uniqueKey: period.uniqueKey,
      },
      now,
    );
  }
}

/** The team id of a balance without loading the team. */
export function teamIdOf(row: { team: Team }): string {
  return row.team.id;
}
