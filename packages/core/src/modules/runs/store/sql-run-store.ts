import type { EntityManager } from '@mikro-orm/core';
import { GroupCommit, type LoneWrite } from '../../../kernel/group-commit.js';
import type { RowSink } from '../../../ports/database.js';
import type { RunCreditHold, RunFence, RunFinalRecord, RunLogEvent, RunSettlement, RunStore, RunStoreDeps, RunStoreWork, RunStoreWriteOptions } from '../../../ports/run-store.js';
import { Run } from '../entities/run.entity.js';
import { claimRunStatement, finishRun, insertRun, seqCeilingStatement, seqCeilingUnfencedStatement, type RunFinal } from '../queries.js';
import { eventRows, rowText } from '../services/event-text.js';
import { followRunBatches, readRunLog } from '../services/follow.js';
import { ROW_EVENTS } from '../services/stored-event-sink.js';

/**
 * How a store writes: the mechanisms its database adapter picks (see `DatabaseAdapter.runStore`).
 * Both default to the portable choice: a transaction per write, the hold first.
 */
export interface SqlRunStoreOptions {
  /**
   * The group commit the store's writes go through. A grouped one (SQLite's store) lets writes
   * that arrive while a commit is under way share the next transaction; the default is a plain
   * one, every write a transaction of its own.
   */
  group?: GroupCommit;
  /**
   * Where a new run's credit hold goes in the transaction that stores it: `first` (the default),
   * before the run's record, or `last`, just before the commit, so that the lock the hold takes on
   * the team's balance row (which the team's other runs wait for, on PostgreSQL) is held for the
   * commit only. With `last` the store chooses the reservation's id, and the record carries it.
   */
  holdOrder?: 'first' | 'last';
}

/**
 * The RunStore of the SQL databases, over the ORM's connections and the adapter's prepared
 * statements: a run's record and claims, its event log (a row per batch of events, their JSON
 * lines joined once), its final record with the settlement of its credits. The portable store
 * (what the runtime uses when the database adapter has no `runStore`), and the base of the
 * adapters' stores, which choose its options and may write some of its units their own way
 * (`createThrough`, `appendThrough`).
 */
export class SqlRunStore implements RunStore {
  private readonly group: GroupCommit;
  private readonly holdLast: boolean;

  constructor(
    protected readonly deps: RunStoreDeps,
    options: SqlRunStoreOptions = {},
  ) {
    this.group = options.group ?? new GroupCommit(deps.fork, false, deps.sql);
    this.holdLast = options.holdOrder === 'last';
  }

  write<T>(work: RunStoreWork<T>, options: RunStoreWriteOptions = {}): Promise<T> {
    return this.group.run((tx, alone, rows) => work(tx, rows, alone), options);
  }

  create(record: Record<string, unknown> & { id: string }, hold: RunCreditHold | null): Promise<string | null> {
    return this.createThrough(this.group, record, hold);
  }

  /** `create` as a unit of `group` (with `lone`, see `GroupCommit.run`); answers the reservation's id. */
  protected createThrough(group: GroupCommit, record: Record<string, unknown> & { id: string }, hold: RunCreditHold | null, lone?: LoneWrite<string | null>): Promise<string | null> {
    return group.run(
      async (tx, alone, rows) => {
        if (hold && this.holdLast) {
          // The run's record first, the hold last before the commit; the reservation's id is
          // chosen here so the record carries it.
          const id = hold.newId();
          await insertRun(rows, tx, { ...record, reservationId: id, reservedCredits: hold.amount } as unknown as Run);
          if ((await hold.take(tx, alone, rows, id)) !== id) throw new Error('The credit hold of a run took another reservation id.');
          return id;
        }
        const id = hold ? await hold.take(tx, alone, rows) : null;
        await insertRun(rows, tx, (hold ? { ...record, reservationId: id, reservedCredits: hold.amount } : record) as unknown as Run);
        return id;
      },
      // A hold that failed with a domain error wrote nothing; a failed insert comes after the hold.
      { atomic: hold ? (error) => hold.wroteNothing(error) : false, concurrent: true },
      lone,
    );
  }

  async claim(fence: RunFence, claim: { startedAt: Date; deadlineAt: Date; now: Date; seqCeiling: number }): Promise<boolean> {
    // One statement (prepared; on PostgreSQL without a transaction of its own).
    const changed = await this.group.runOne(
      claimRunStatement,
      [fence.attempt + 1, claim.now, claim.startedAt, claim.deadlineAt, claim.now, claim.seqCeiling, fence.id, fence.attempt],
      { atomic: true, concurrent: true },
    );
    return changed > 0;
  }

  async setSeqCeiling(fence: { id: string; attempt?: number }, ceiling: number): Promise<boolean> {
    // One prepared statement: a streaming run reserves while its events are being stored, and the
    // ORM's update cost a millisecond of the main thread there.
    const changed =
      fence.attempt === undefined
        ? await this.group.runOne(seqCeilingUnfencedStatement, [ceiling, fence.id], { atomic: true, concurrent: true })
        : await this.group.runOne(seqCeilingStatement, [ceiling, fence.id, fence.attempt], { atomic: true, concurrent: true });
    return changed > 0;
  }

  append<T>(runId: string, events: readonly RunLogEvent[], step?: { write: RunStoreWork<T>; keep?: (answer: T) => boolean; conditional?: readonly RunLogEvent[] }): Promise<T | undefined> {
    if (!step && events.length > 0 && events.length <= ROW_EVENTS) {
      // Events alone that fit one row: a write of one statement (see `GroupCommit.insertOne`).
      return this.group.insertOne(eventRows, [runId, events[0]!.seq, events.at(-1)!.seq, rowText(events, 0, events.length), new Date()]).then(() => undefined);
    }
    return this.appendThrough(this.group, runId, events, step);
  }

  /** `append` of events with a write as a unit of `group` (with `lone`, see `GroupCommit.run`). */
  protected appendThrough<T>(group: GroupCommit, runId: string, events: readonly RunLogEvent[], step?: { write: RunStoreWork<T>; keep?: (answer: T) => boolean; conditional?: readonly RunLogEvent[] }, lone?: LoneWrite<T | undefined>): Promise<T | undefined> {
    // Runs again from the start when its group is rolled back: it changes nothing but the database.
    return group.run(
      async (tx, alone, rows) => {
        const answer = step ? await step.write(tx, rows, alone) : undefined;
        // The write did not take: its conditional events are not stored.
        const dropped = step?.conditional?.length && step.keep && !step.keep(answer as T) ? new Set(step.conditional) : null;
        const stored = dropped ? events.filter((event) => !dropped.has(event)) : events;
        if (stored.length) {
          const now = new Date();
          for (let i = 0; i < stored.length; i += ROW_EVENTS) {
            const end = Math.min(stored.length, i + ROW_EVENTS);
            await rows.insertRow(tx, eventRows, [runId, stored[i]!.seq, stored[end - 1]!.seq, rowText(stored, i, end), now]);
          }
        }
        return answer;
      },
      { concurrent: true },
      lone,
    );
  }

  finishWork(fence: RunFence, final: RunFinalRecord, settle: RunSettlement | null): RunStoreWork<number> {
    const { sql } = this.deps;
    return async (tx: EntityManager, rows: RowSink) => {
      // The record first, fenced by the attempt: a superseded attempt settles nothing.
      const record = { ...final, usedCredits: settle ? settle.used : null } as unknown as RunFinal;
      const changed = await finishRun(sql, tx, fence, record);
      if (!changed || !settle) return changed;
      if (!(await settle.apply(tx, rows))) await tx.nativeUpdate(Run, fence, { usedCredits: null });
      return changed;
    };
  }

  read(runId: string, after: number, below?: number): Promise<RunLogEvent[]> {
    return readRunLog(this.deps.fork, this.deps.sql, runId, after, below);
  }

  follow(runId: string, options: { after: number; signal?: AbortSignal; endWhenWaiting?: boolean }): AsyncIterable<RunLogEvent[]> {
    return followRunBatches(this.deps.fork, this.deps.pubsub, runId, options.after, { endWhenWaiting: options.endWhenWaiting ?? false, signal: options.signal, sql: this.deps.sql });
  }
}
