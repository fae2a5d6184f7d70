import {
  closePlan,
  giveBackPgCtes,
  giveBackPgParams,
  grantHoldPgCtes,
  grantHoldPgParams,
  GroupCommit,
  ROW_EVENTS,
  rowText,
  sqlStatement,
  SqlRunStore,
  type Run,
  type RunCreditHold,
  type RunFence,
  type RunFinal,
  type RunFinalRecord,
  type RunLogEvent,
  type RunSettlement,
  type RunStoreDeps,
  type RunStoreWork,
  type SqlValue,
} from '@trellis/core';
import { finishRunPg, insertRunWhenPg } from './run-queries.js';

/** A final write this store made (`finishWork`), as data. */
interface Finish {
  fence: RunFence;
  final: RunFinalRecord;
  settle: RunSettlement | null;
}

/** SQLSTATE of the division by zero the one-statement finish uses to undo itself (see `finishInOne`). */
const UNDONE = '22012';

/** Prepared statements by text, one name per distinct text (the texts vary with a write's shape, not its values). */
const statements = new Map<string, ReturnType<typeof sqlStatement>>();
function statementOf(kind: string, text: string) {
  let statement = statements.get(text);
  if (!statement) statements.set(text, (statement = sqlStatement(`runs.pg_${kind}_${statements.size}`, text)));
  return statement;
}

/**
 * The RunStore of PostgreSQL: core's `SqlRunStore`, with the writes that change a team's credit
 * balance (a run's record with its hold, its final record with the settlement) in a group commit
 * of their own, and, when no group is under way, each written as one statement of data-modifying
 * CTEs, without BEGIN and COMMIT (a statement is atomic by itself):
 *
 * - `create` with a hold the grant credits cover: the team's share lock, the grant credits, the
 *   reservation, its ledger entry and the run's record (instead of BEGIN, the record, the hold,
 *   COMMIT);
 * - the final write (`finishWork` run by `append` with the run's last events, one row of them):
 *   the final record, the reservation closed, the unused credits given back with their ledger
 *   entry, and the events (instead of BEGIN, four statements, COMMIT).
 *
 * Everything else, and those two when the statement cannot say it (grant credits short, no
 * balance, a reservation closed already or partly paid with purchased credits, more events than
 * a row), is `SqlRunStore`'s transaction, with the same rows written. A one-statement finish
 * that meets such a case undoes itself (a division by zero in its last select, SQLSTATE 22012:
 * the statement and everything it wrote is rolled back) and the transaction runs instead.
 *
 * Why a group: every run updates its team's balance row twice, and an update holds the row's lock
 * until its commit. Written one by one, a busy team's runs wait on that lock in turn, and the waits
 * and wake-ups were about half of PostgreSQL's CPU per run (docs/runs.md). Writes that arrive while
 * one is under way share the next transaction: the row is locked once per group, and the group
 * commits once. The run's other writes (its claim, its events) touch no shared row and go straight
 * to the pool's connections.
 */
export class PgRunStore extends SqlRunStore {
  private readonly finishes = new WeakMap<RunStoreWork<number>, Finish>();
  /** The group commit of the writes that change a team's balance (see the class). */
  private readonly balanceWrites: GroupCommit;

  constructor(deps: RunStoreDeps) {
    // A transaction per write (many connections, each commit its own), and in the transactions
    // that store a new run with its hold (where one statement cannot say it) the hold goes last:
    // the balance row's lock the team's other runs wait for is then held for the commit only.
    super(deps, { holdOrder: 'last' });
    // One statement at a time on the group's connection (see `GroupCommit`'s `interleave`).
    this.balanceWrites = new GroupCommit(deps.fork, true, deps.sql, false);
  }

  override create(record: Record<string, unknown> & { id: string }, hold: RunCreditHold | null): Promise<string | null> {
    if (!hold) return super.create(record, hold);
    return this.createThrough(this.balanceWrites, record, hold, async () => {
      const reservationId = await this.createInOne(record, hold);
      return reservationId === null ? null : { value: reservationId };
    });
  }

  /** A run's record with its hold in one statement (see the class): the reservation's id, or null when nothing was written. */
  private async createInOne(record: Record<string, unknown> & { id: string }, hold: RunCreditHold): Promise<string | null> {
    if (hold.grant && Number.isSafeInteger(hold.amount) && hold.amount >= 1) {
      const grant = hold.grant;
      const reservationId = hold.newId();
      const insert = insertRunWhenPg('n', 'l', { ...record, reservationId, reservedCredits: hold.amount } as unknown as Run);
      const text = `with ${grantHoldPgCtes}, ${insert.text}
  select (select count(*) from "t") as "team", (select count(*) from "b") as "taken", (select count(*) from "r") as "reserved",
    (select count(*) from "l") as "recorded", (select count(*) from "n") as "stored"`;
      const params = [
        ...grantHoldPgParams({ reservationId, ledgerEntryId: hold.newId(), teamId: grant.teamId, amount: hold.amount, reason: grant.reason, userId: grant.userId, expiresAt: grant.expiresAt, now: grant.now }),
        ...insert.params,
      ];
      // A failed statement wrote nothing: the general path then fails as it says (a hold that
      // fails, 500 `balance_check_failed`, told apart from a record that does, e.g. a duplicate key).
      const row = await this.deps.sql.first<Record<string, unknown>>(statementOf('create', text), params).catch(() => null);
      if (row === null) return null;
      const counts = ['taken', 'reserved', 'recorded', 'stored'].map((key) => Number(row?.[key]));
      if (counts.every((count) => count === 1)) return reservationId;
      if (counts.some((count) => count !== 0)) throw new Error(`The one-statement run create wrote ${counts.join('/')} rows (balance, reservation, ledger, run).`);
      // Nothing written (grant credits short, no balance yet, no team): the general path says what to do.
    }
    return null;
  }

  override finishWork(fence: RunFence, final: RunFinalRecord, settle: RunSettlement | null): RunStoreWork<number> {
    const work = super.finishWork(fence, final, settle);
    this.finishes.set(work, { fence, final, settle });
    return work;
  }

  override async append<T>(runId: string, events: readonly RunLogEvent[], step?: { write: RunStoreWork<T>; keep?: (answer: T) => boolean; conditional?: readonly RunLogEvent[] }): Promise<T | undefined> {
    const finish = step && this.finishes.get(step.write as unknown as RunStoreWork<number>);
    if (!step || !finish) return super.append(runId, events, step);
    // The statement stores the conditional events when the final record was written: what `keep` says of the answer must agree.
    const keeps = !step.conditional?.length || (step.keep !== undefined && step.keep(1 as T) && !step.keep(0 as T));
    const inOne = keeps && events.length <= ROW_EVENTS && (!finish.settle || Boolean(finish.settle.close));
    const writeInOne = async (): Promise<{ value: T } | null> => {
      if (!inOne) return null;
      try {
        return { value: (await this.finishInOne(runId, events, step.conditional ?? [], finish)) as T };
      } catch (error) {
        if ((error as { code?: unknown }).code !== UNDONE) throw error;
        return null;
      }
    };
    // No settlement: the run's balance is not written, the final write needs no group.
    if (!finish.settle) {
      const wrote = await writeInOne();
      return wrote ? wrote.value : super.append(runId, events, step);
    }
    return this.appendThrough(this.balanceWrites, runId, events, step, writeInOne);
  }

  /** The final write in one statement (see the class): answers 1, or 0 when the attempt was superseded. */
  private async finishInOne(runId: string, events: readonly RunLogEvent[], conditional: readonly RunLogEvent[], { fence, final, settle }: Finish): Promise<number> {
    const close = settle?.close ?? null;
    const f = finishRunPg('f', fence, { ...final, usedCredits: settle ? settle.used : null } as unknown as RunFinal);
    const ctes = [f.text];
    const params: SqlValue[] = [...f.params];
    if (close) {
      ctes.push(`"c" as (
    update "billing_credit_reservations" set "status" = ?::text, "used_credits" = ?::int, "closed_at" = ?::timestamptz, "updated_at" = ?::timestamptz
    where "id" = ?::uuid and "status" = 'held' and "amount" = ?::int and "grant_part" = ?::int and "purchase_part" = 0 and "reason" = ?::text
      and "amount" >= ?::int and exists (select 1 from "f")
    returning "team_id", "grant_period_end"
  )`, giveBackPgCtes('c'));
      const status = close.release ? 'released' : 'settled';
      const plan = closePlan({ amount: close.reserved, grantPart: close.reserved, purchasePart: 0, reason: close.reservationReason }, status, close.used, close.reason);
      params.push(status, close.used, close.now, close.now, close.reservationId, close.reserved, close.reserved, close.reservationReason, close.used);
      params.push(...giveBackPgParams({ ledgerEntryId: close.ledgerEntryId, reservationId: close.reservationId, kind: plan.kind, grantBack: plan.grantBack, purchaseBack: plan.purchaseBack, reasonSameMonth: plan.reasonSameMonth, reasonMonthEnded: plan.reasonMonthEnded, now: close.now }));
    }
    if (events.length) {
      // The row the log gets: every event when the final record was written, else those that are not conditional.
      const row = `select ?::uuid, ?::int, ?::int, ?::json, ?::timestamptz`;
      const now = new Date();
      const rowOf = (kept: readonly RunLogEvent[]) => [runId, kept[0]!.seq, kept.at(-1)!.seq, rowText(kept, 0, kept.length), now];
      const dropped = new Set(conditional);
      const unconditional = dropped.size ? events.filter((event) => !dropped.has(event)) : events;
      const selects: string[] = [];
      if (unconditional.length === events.length) {
        selects.push(row);
        params.push(...rowOf(events));
      } else {
        selects.push(`${row} where exists (select 1 from "f")`);
        params.push(...rowOf(events));
        if (unconditional.length) {
          selects.push(`${row} where not exists (select 1 from "f")`);
          params.push(...rowOf(unconditional));
        }
      }
      ctes.push(`"e" as (
    insert into "run_events" ("run_id", "seq", "last_seq", "events", "created_at") ${selects.join(' union all ')}
    returning 1
  )`);
    }
    // A final record written whose settlement is not whole (reservation not closed, no balance): undone (see the class).
    const whole = close ? `, 1 / (case when (select count(*) from "f") = 1 and (select count(*) from "l") <> 1 then 0 else 1 end) as "whole"` : '';
    const text = `with ${ctes.join(', ')}
  select (select count(*) from "f") as "finished"${whole}`;
    const answer = await this.deps.sql.first<Record<string, unknown>>(statementOf('finish', text), params);
    return Number(answer?.['finished']);
  }
}
