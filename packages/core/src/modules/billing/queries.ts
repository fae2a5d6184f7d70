import type { EntityManager } from '@mikro-orm/core';
import { sqlDate, sqlInsertRows, sqlRowTable, sqlStatement, type PreparedStatements, type RowSink, type SqlValue } from '../../ports/database.js';

/**
 * The billing module's hot-path statements (prepared once, see PreparedStatements): a run's credit
 * hold and its settlement (`CreditService.hold` / `closeOnly`), a few statements each instead of
 * the ORM's lock, read, flush round trips. Everything else goes through the ORM.
 */

/** A write of these statements that changed no row where one had to change. */
export class CreditWriteIncomplete extends Error {
  constructor(readonly what: string) {
    super(`A credit write changed no row: ${what}.`);
    this.name = 'CreditWriteIncomplete';
  }
}

/** Runs a write that must change exactly one row. */
async function runOne(sql: PreparedStatements, statement: ReturnType<typeof sqlStatement>, params: readonly SqlValue[], em: EntityManager, what: string): Promise<void> {
  if ((await sql.run(statement, params, em)) !== 1) throw new CreditWriteIncomplete(what);
}

/** PostgreSQL: the team's share lock (as `lockTeam`), so a deletion of the team waits for the billing transaction. */
const shareLockTeam = sqlStatement('billing.share_lock_team', 'select "id" from "teams" where "id" = ? for share');

/** Answers whether the team exists (and holds its share lock until the transaction ends on PostgreSQL; SQLite has one writer). */
export async function lockTeamShared(sql: PreparedStatements, em: EntityManager, teamId: string): Promise<boolean> {
  if (sql.dialect !== 'postgresql') return true;
  return (await sql.first(shareLockTeam, [teamId], em)) !== undefined;
}

/**
 * Takes `amount` from the grant credits when they cover all of it (the common case): the row lock
 * and the change in one statement. No row when the grant credits are short (or the team has no
 * balance yet): nothing was written, and the caller takes the general path.
 */
const takeFromGrant = sqlStatement(
  'billing.take_from_grant',
  `update "billing_credit_balances" set "grant_credits" = "grant_credits" - ?, "version" = "version" + 1, "updated_at" = ?
  where "team_id" = ? and "grant_credits" >= ? returning "grant_credits" as "grantCredits", "purchase_credits" as "purchaseCredits", "period_end" as "periodEnd"`,
);

export interface BalanceAfter {
  grantCredits: number;
  purchaseCredits: number;
  periodEnd: Date;
}

const balanceAfter = (row: Record<string, unknown>): BalanceAfter => ({
  grantCredits: Number(row['grantCredits']),
  purchaseCredits: Number(row['purchaseCredits']),
  periodEnd: sqlDate(row['periodEnd'])!,
});

export async function takeGrantCredits(sql: PreparedStatements, em: EntityManager, teamId: string, amount: number, now: Date): Promise<BalanceAfter | null> {
  const row = await sql.first<Record<string, unknown>>(takeFromGrant, [amount, now, teamId, amount], em);
  return row ? balanceAfter(row) : null;
}

/**
 * Gives credits back to a balance: the purchase part always, the grant part only while the
 * balance is still in the credit month the grant came from (`period_end` unchanged). The row lock
 * and the change in one statement; answers the balance after it (its `periodEnd` tells whether the
 * grant part went back).
 */
const giveBack = sqlStatement(
  'billing.give_back',
  `update "billing_credit_balances" set
    "grant_credits" = "grant_credits" + case when "period_end" = ? then ? else 0 end,
    "purchase_credits" = "purchase_credits" + ?, "version" = "version" + 1, "updated_at" = ?
  where "team_id" = ? returning "grant_credits" as "grantCredits", "purchase_credits" as "purchaseCredits", "period_end" as "periodEnd"`,
);

export async function giveCreditsBack(sql: PreparedStatements, em: EntityManager, input: { teamId: string; grantBack: number; grantPeriodEnd: Date; purchaseBack: number; now: Date }): Promise<BalanceAfter | null> {
  const row = await sql.first<Record<string, unknown>>(giveBack, [input.grantPeriodEnd, input.grantBack, input.purchaseBack, input.now, input.teamId], em);
  return row ? balanceAfter(row) : null;
}

/** Rows of the credit ledger (after the reservations they refer to). */
const ledgerRows = sqlRowTable(
  'billing.insert_ledger_entries',
  `"billing_credit_ledger" ("id", "team_id", "kind", "grant_delta", "purchase_delta", "grant_after", "purchase_after", "reason", "reservation_id", "order_id", "unique_key", "created_at")`,
  '(?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, ?)',
  2,
);
const insertLedgerEntry = sqlInsertRows(ledgerRows, 1);

/**
 * One ledger entry of a reservation, settlement or release (as `CreditLedger.record` writes it):
 * at once, or, given `rows` (a group commit), with the other rows of the group.
 */
export async function recordLedgerEntry(
  sql: PreparedStatements,
  em: EntityManager,
  entry: { id: string; teamId: string; kind: 'reservation' | 'settlement' | 'release'; grantDelta: number; purchaseDelta: number; after: BalanceAfter; reason: string; reservationId: string; createdAt: Date },
  rows?: RowSink,
): Promise<void> {
  const values = [entry.id, entry.teamId, entry.kind, entry.grantDelta, entry.purchaseDelta, entry.after.grantCredits, entry.after.purchaseCredits, entry.reason.slice(0, 500), entry.reservationId, entry.createdAt];
  if (rows) return rows.insertRow(em, ledgerRows, values);
  await runOne(sql, insertLedgerEntry, values, em, `the ${entry.kind} entry of the credit ledger`);
}

/** Rows of held credit reservations (first: ledger entries and runs refer to them). */
const reservationRows = sqlRowTable(
  'billing.insert_reservations',
  `"billing_credit_reservations" ("id", "team_id", "status", "amount", "grant_part", "purchase_part", "grant_period_end", "used_credits", "reason", "user_id", "expires_at", "closed_at", "created_at", "updated_at")`,
  "(?, ?, 'held', ?, ?, ?, ?, null, ?, ?, ?, null, ?, ?)",
  1,
);
const insertReservation = sqlInsertRows(reservationRows, 1);

export interface HeldReservation {
  id: string;
  teamId: string;
  amount: number;
  grantPart: number;
  purchasePart: number;
  grantPeriodEnd: Date;
  reason: string;
  userId: string | null;
  expiresAt: Date;
  createdAt: Date;
}

/** Inserts a held reservation: at once, or, given `rows` (a group commit), with the other rows of the group. */
export async function insertHeldReservation(sql: PreparedStatements, em: EntityManager, r: HeldReservation, rows?: RowSink): Promise<void> {
  const values = [r.id, r.teamId, r.amount, r.grantPart, r.purchasePart, r.grantPeriodEnd, r.reason.slice(0, 500), r.userId, r.expiresAt, r.createdAt, r.createdAt];
  if (rows) return rows.insertRow(em, reservationRows, values);
  await runOne(sql, insertReservation, values, em, 'the credit reservation');
}

/**
 * Closes a held reservation (settled or released) whose amount covers `used`, and answers what
 * it held. No row: the reservation is missing, closed, or smaller than `used` (nothing written).
 */
const closeReservation = sqlStatement(
  'billing.close_reservation',
  `update "billing_credit_reservations" set "status" = ?, "used_credits" = ?, "closed_at" = ?, "updated_at" = ?
  where "id" = ? and "status" = 'held' and "amount" >= ?
  returning "team_id" as "teamId", "amount", "grant_part" as "grantPart", "purchase_part" as "purchasePart", "grant_period_end" as "grantPeriodEnd", "reason"`,
);

export interface ClosedReservation {
  teamId: string;
  amount: number;
  grantPart: number;
  purchasePart: number;
  grantPeriodEnd: Date;
  reason: string;
}

export async function closeHeldReservation(sql: PreparedStatements, em: EntityManager, input: { id: string; status: 'settled' | 'released'; used: number; now: Date }): Promise<ClosedReservation | null> {
  const row = await sql.first<Record<string, unknown>>(closeReservation, [input.status, input.used, input.now, input.now, input.id, input.used], em);
  if (!row) return null;
  return {
    teamId: row['teamId'] as string,
    amount: Number(row['amount']),
    grantPart: Number(row['grantPart']),
    purchasePart: Number(row['purchasePart']),
    grantPeriodEnd: sqlDate(row['grantPeriodEnd'])!,
    reason: row['reason'] as string,
  };
}
