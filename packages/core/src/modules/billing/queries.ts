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
 * The general path of taking credits (grant credits short, so purchased ones are needed too): the
 * balance is read (on PostgreSQL under its row lock, after the team's share lock: the order every
 * billing write takes them in), the parts are chosen (grant credits first), and `takeParts` takes
 * exactly those parts, guarded so that it changes no row unless both buckets still hold them.
 */
const readBalance = sqlStatement(
  'billing.read_balance',
  `select "grant_credits" as "grantCredits", "purchase_credits" as "purchaseCredits", "period_end" as "periodEnd" from "billing_credit_balances" where "team_id" = ?`,
);
const readBalanceForUpdate = sqlStatement('billing.read_balance_for_update', `${readBalance.text} for update`);

/** The team's balance (PostgreSQL: locked until the transaction ends), or null when it has none yet. */
export async function lockBalance(sql: PreparedStatements, em: EntityManager, teamId: string): Promise<BalanceAfter | null> {
  const row = await sql.first<Record<string, unknown>>(sql.dialect === 'postgresql' ? readBalanceForUpdate : readBalance, [teamId], em);
  return row ? balanceAfter(row) : null;
}

const takeParts = sqlStatement(
  'billing.take_parts',
  `update "billing_credit_balances" set "grant_credits" = "grant_credits" - ?, "purchase_credits" = "purchase_credits" - ?, "version" = "version" + 1, "updated_at" = ?
  where "team_id" = ? and "grant_credits" >= ? and "purchase_credits" >= ? returning "grant_credits" as "grantCredits", "purchase_credits" as "purchaseCredits", "period_end" as "periodEnd"`,
);

/** Takes `grantPart` grant and `purchasePart` purchased credits; no row (nothing written) when the balance no longer holds them. */
export async function takeCreditParts(sql: PreparedStatements, em: EntityManager, teamId: string, grantPart: number, purchasePart: number, now: Date): Promise<BalanceAfter | null> {
  const row = await sql.first<Record<string, unknown>>(takeParts, [grantPart, purchasePart, now, teamId, grantPart, purchasePart], em);
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

// -------------------------------------------------------------------------------------------------
// PostgreSQL only: the balance's row lock is held from the UPDATE that takes it until COMMIT, so
// every statement between the two delays the team's next run. These statements write the balance
// and its ledger entry (and, for a hold, the reservation) in one statement, with data-modifying
// CTEs, and the callers place them last before COMMIT. Casts are spelled out: PostgreSQL cannot
// infer a parameter's type from an INSERT ... SELECT target column.

/**
 * The CTEs of a hold from the grant credits (`holdFromGrantPg`, and a run's record stored with its
 * hold in one statement: `PgRunStore` of @trellis/db-postgres): "t" the team's share lock, "b"
 * takes `amount` from the grant credits when they cover all of it, "r" inserts the held
 * reservation (its grant month: the balance's `period_end`), "l" the reservation's ledger entry
 * (the balance after it). Each writes one row when the credits were taken, none (nothing
 * written) when they were not. Any other count (a trigger skipped an insert) means a partial write
 * the caller must roll back; it must not be taken for "not enough grant credits". Placeholders:
 * `grantHoldPgParams`.
 */
export const grantHoldPgCtes = `"t" as (
    select "id" from "teams" where "id" = ?::uuid for share
  ), "b" as (
    update "billing_credit_balances" set "grant_credits" = "grant_credits" - ?::int, "version" = "version" + 1, "updated_at" = ?::timestamptz
    where "team_id" = ?::uuid and "grant_credits" >= ?::int and exists (select 1 from "t")
    returning "grant_credits", "purchase_credits", "period_end"
  ), "r" as (
    insert into "billing_credit_reservations" ("id", "team_id", "status", "amount", "grant_part", "purchase_part", "grant_period_end", "used_credits", "reason", "user_id", "expires_at", "closed_at", "created_at", "updated_at")
    select ?::uuid, ?::uuid, 'held', ?::int, ?::int, 0, "b"."period_end", null, ?::text, ?::uuid, ?::timestamptz, null, ?::timestamptz, ?::timestamptz from "b"
    returning "id"
  ), "l" as (
    insert into "billing_credit_ledger" ("id", "team_id", "kind", "grant_delta", "purchase_delta", "grant_after", "purchase_after", "reason", "reservation_id", "order_id", "unique_key", "created_at")
    select ?::uuid, ?::uuid, 'reservation', ?::int, 0, "b"."grant_credits", "b"."purchase_credits", ?::text, "r"."id", null, null, ?::timestamptz from "b" cross join "r"
    returning "id"
  )`;

/** The values of `grantHoldPgCtes`' placeholders, in order. */
export function grantHoldPgParams(h: GrantHold): SqlValue[] {
  const reason = h.reason.slice(0, 500);
  return [
    h.teamId,
    h.amount, h.now, h.teamId, h.amount,
    h.reservationId, h.teamId, h.amount, h.amount, reason, h.userId, h.expiresAt, h.now, h.now,
    h.ledgerEntryId, h.teamId, -h.amount, `Reserved for ${reason}`.slice(0, 500), h.now,
  ];
}

const holdFromGrantPg = sqlStatement(
  'billing.hold_from_grant_pg',
  `with ${grantHoldPgCtes}
  select (select count(*) from "t") as "team", (select count(*) from "b") as "taken", (select count(*) from "r") as "reserved", (select count(*) from "l") as "recorded"`,
);

export interface GrantHold {
  reservationId: string;
  ledgerEntryId: string;
  teamId: string;
  amount: number;
  /** The reservation's reason (the ledger's reads `Reserved for <reason>`). */
  reason: string;
  userId: string | null;
  expiresAt: Date;
  now: Date;
}

/**
 * PostgreSQL: `holdFromGrantPg`, which first takes the team's share lock (as `lockTeamShared`, in
 * the same statement: one round trip fewer). Answers `taken` when the grant credits were taken,
 * `short` when they were not (nothing was written), `no_team` when the team is gone (nothing was
 * written). Throws `CreditWriteIncomplete` when only part of it was written.
 */
export async function holdGrantCreditsPg(sql: PreparedStatements, em: EntityManager, h: GrantHold): Promise<'taken' | 'short' | 'no_team'> {
  const row = await sql.first<Record<string, unknown>>(holdFromGrantPg, grantHoldPgParams(h), em);
  const taken = Number(row?.['taken']);
  const reserved = Number(row?.['reserved']);
  const recorded = Number(row?.['recorded']);
  if (taken === 0 && reserved === 0 && recorded === 0) return Number(row?.['team']) === 1 ? 'short' : 'no_team';
  if (taken === 1 && reserved === 1 && recorded === 1) return 'taken';
  throw new CreditWriteIncomplete(`the credit hold wrote ${taken} balance, ${reserved} reservation and ${recorded} ledger rows`);
}

/**
 * The CTEs that give a closed reservation's credits back (as `giveBack`: the grant part only while
 * the balance is still in the reservation's grant month) and insert the ledger entry with the
 * balance after it: its grant delta and its reason depend on whether the month is the same, so
 * both reasons are bound and the statement picks one. `source` names a CTE (or table) of one row
 * with the reservation's `team_id` and `grant_period_end` (none: nothing is written). "t" takes
 * the team's share lock, "b" changes the balance, "l" inserts the entry: one row each, or none
 * when the team is gone or has no balance. Placeholders: `giveBackPgParams`.
 */
export function giveBackPgCtes(source: string): string {
  const s = `"${source}"`;
  return `"t" as (
    select "id" from "teams" where "id" = (select "team_id" from ${s}) for share
  ), "b" as (
    update "billing_credit_balances" set
      "grant_credits" = "grant_credits" + case when "period_end" = ${s}."grant_period_end" then ?::int else 0 end,
      "purchase_credits" = "purchase_credits" + ?::int, "version" = "version" + 1, "updated_at" = ?::timestamptz
    from ${s}
    where "billing_credit_balances"."team_id" = ${s}."team_id" and exists (select 1 from "t")
    returning "grant_credits", "purchase_credits", "period_end" = ${s}."grant_period_end" as "same_month"
  ), "l" as (
    insert into "billing_credit_ledger" ("id", "team_id", "kind", "grant_delta", "purchase_delta", "grant_after", "purchase_after", "reason", "reservation_id", "order_id", "unique_key", "created_at")
    select ?::uuid, ${s}."team_id", ?::text, case when "b"."same_month" then ?::int else 0 end, ?::int, "b"."grant_credits", "b"."purchase_credits",
      case when "b"."same_month" then ?::text else ?::text end, ?::uuid, null, null, ?::timestamptz from "b" cross join ${s}
    returning "id"
  )`;
}

/** The values of `giveBackPgCtes`' placeholders, in order. */
export function giveBackPgParams(g: Omit<GiveBack, 'teamId' | 'grantPeriodEnd'>): SqlValue[] {
  return [
    g.grantBack, g.purchaseBack, g.now,
    g.ledgerEntryId, g.kind, g.grantBack, g.purchaseBack, g.reasonSameMonth.slice(0, 500), g.reasonMonthEnded.slice(0, 500), g.reservationId, g.now,
  ];
}

const giveBackPg = sqlStatement(
  'billing.give_back_pg',
  `with "s" as (select ?::uuid as "team_id", ?::timestamptz as "grant_period_end"), ${giveBackPgCtes('s')}
  select (select count(*) from "l") as "recorded", (select "grant_credits" + "purchase_credits" from "b") as "total"`,
);

export interface GiveBack {
  ledgerEntryId: string;
  reservationId: string;
  teamId: string;
  kind: 'settlement' | 'release';
  grantBack: number;
  grantPeriodEnd: Date;
  purchaseBack: number;
  /** The ledger's reason when the balance is still in the grant month, and when it is not. */
  reasonSameMonth: string;
  reasonMonthEnded: string;
  now: Date;
}

/**
 * PostgreSQL: `giveBackPg`, which first takes the team's share lock (as `lockTeamShared`, in the
 * same statement); throws `CreditWriteIncomplete` when the team is gone or has no balance.
 */
export async function giveBackAndRecordPg(sql: PreparedStatements, em: EntityManager, g: GiveBack): Promise<number> {
  const row = await sql.first<Record<string, unknown>>(giveBackPg, [g.teamId, g.grantPeriodEnd, ...giveBackPgParams(g)], em);
  if (Number(row?.['recorded']) !== 1) throw new CreditWriteIncomplete('the team of the reservation or its credit balance');
  return Number(row?.['total']);
}
