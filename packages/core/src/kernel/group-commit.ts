import type { EntityManager } from '@mikro-orm/core';
import { rowsPerInsert, sqlInsertRows, type PreparedStatements, type RowSink, type SqlRowTable, type SqlStatement, type SqlValue } from '../ports/database.js';
import { inTransaction } from './transaction.js';

/** How a unit of work behaves when it fails (see `GroupCommit.run`). */
export interface GroupWorkOptions {
  /**
   * True when a failure of `work` leaves nothing written: it is one statement, or it fails before
   * its first write, or it wraps its statements in a transaction of its own (`inTransaction` on
   * the given manager makes that a savepoint). The other units of the group then commit as if it
   * had not been there. A function: says so of the error `work` failed with. False (the
   * default): a failure rolls the whole group back and every unit of it runs again alone.
   */
  atomic?: boolean | ((error: unknown) => boolean);
  /**
   * True when `work` may run at the same time as the other concurrent units of its group, its
   * statements interleaved with theirs on the one connection: it opens no savepoint, changes no
   * entity of the manager (prepared statements, `nativeUpdate`, `insertRow`), and each of its
   * reads and writes is one statement whose outcome no other unit's statement can change halfway
   * (conditional updates, `returning`), so the order in which the units' statements meet does not
   * matter. The connection then never waits for this thread between two statements of the group
   * (a statement's answer is handled here while the next one, of another unit, runs). False (the
   * default): the unit runs alone, after the concurrent units before it ended. A concurrent unit
   * that finds it needs to run alone throws `RunAlone` before its first write.
   */
  concurrent?: boolean;
}

/**
 * How a unit writes when it arrives with no group under way nor units queued (grouped only):
 * without a transaction, typically one statement that says everything the unit's `work` does
 * (atomic by itself). It answers `{ value }` when it wrote, or null when it wrote nothing and
 * `work` must run instead (in the next group). A few lone writes may be under way at once
 * (`MAX_LONE`); past that, units queue, and their group starts once the lone writes ended, so a
 * lone write and a group of the same process never wait on each other's row locks.
 */
export type LoneWrite<T> = () => Promise<{ value: T } | null>;

/**
 * Thrown by a concurrent unit, before its first write, when it finds it needs to run alone after
 * all (it is about to open a savepoint or write entities): the group then executes it again, alone,
 * and its caller never sees this error. `work`'s second argument says whether it runs alone.
 */
export class RunAlone extends Error {
  constructor() {
    super('This unit of work runs alone.');
    this.name = 'RunAlone';
  }
}

/**
 * A unit of work: `alone` is false while other units of its group run at the same time (see
 * `concurrent`). `rows` takes the rows the unit inserts last (see `GroupCommit.insertRow`): in a
 * group they are the unit's own, written with the other units' rows when the group ends, and
 * dropped when the unit fails.
 */
export type GroupWork<T> = (tx: EntityManager, alone: boolean, rows: RowSink) => Promise<T>;

interface Unit {
  work: GroupWork<unknown>;
  atomic: boolean | ((error: unknown) => boolean);
  concurrent: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** The rows one unit of the group executing now deferred, table by table. */
type UnitRows = Map<SqlRowTable, SqlValue[]>;

/** Units of work one group commit takes at most. */
const MAX_GROUP = 64;
/**
 * Lone writes under way at most: while fewer wait on each other (on a row both lock), writing
 * each alone costs less than a group's transaction; past that, the writes that arrive queue for a
 * group, which starts once the lone writes ended.
 */
const MAX_LONE = 4;

/**
 * Group commit. SQLite has one writer and, with `synchronous=FULL`, every
 * commit is a sync of its WAL (milliseconds), so short transactions that each commit alone are
 * bounded by the disk, not by their work. Here units of work that arrive while a commit is under
 * way (or in the same tick as the first) queue up and are executed in the next transaction, which
 * commits them all at once: one after the other, or at the same time for `concurrent` units
 * (their statements interleaved on the one connection), and each caller's promise resolves only
 * once its writes are committed. A lone unit costs what its own transaction would (begin, its
 * statements, commit).
 *
 * A unit must only use the manager it is given (another connection would wait for this one's
 * transaction) and must not wait for anything but the database. Not grouped, a unit is a
 * transaction of its own. On PostgreSQL (many connections, each commit its own) grouping pays where
 * writes meet on one row: the runs' store groups them (a team's balance row, updated by every
 * run's hold and settlement, is then locked once per group and its updates share one commit,
 * rather than every run of the team waiting on the lock), the OAuth token rotations do not.
 *
 * Used by the OAuth token endpoint (refresh-token rotations) and the runs (a run's record, its
 * claim, its events and checkpoints, its credit hold and settlement). The run stores of the
 * database adapters make their own (SQLite's store groups every write, PostgreSQL's the balance
 * writes), so @trellis/core exports it.
 */
export class GroupCommit implements RowSink {
  private queue: Unit[] = [];
  private draining = false;
  /** Lone writes under way (see `LoneWrite`). */
  private lonesInFlight = 0;
  /** The transaction of the group executing now. */
  private groupTx: EntityManager | null = null;
  /** Not grouped: the writes `atEnd` put off, by the transaction of the unit executing them. */
  private readonly lastWrites = new WeakMap<EntityManager, (() => Promise<void>)[]>();

  /**
   * `sql`: for `insertRow`. `interleave` false: the units of a group run one after the other even
   * when `concurrent` (a driver that must not be sent a statement while another is under way on
   * the connection: node-postgres queues it, but deprecates that and drops it in pg 9).
   */
  constructor(
    private readonly fork: () => EntityManager,
    private readonly grouped: boolean,
    private readonly sql?: PreparedStatements,
    private readonly interleave = true,
  ) {}

  /**
   * Runs `work` in a transaction (shared with others when grouped); resolves with its answer once
   * committed. Grouped, with `lone`, a unit that finds no group under way writes through `lone`.
   */
  run<T>(work: GroupWork<T>, options: GroupWorkOptions = {}, lone?: LoneWrite<T>): Promise<T> {
    if (lone && this.grouped && !this.draining && this.queue.length === 0 && this.lonesInFlight < MAX_LONE) return this.runLone(work, options, lone);
    if (!this.grouped) {
      return inTransaction(this.fork(), async (tx) => {
        const last: (() => Promise<void>)[] = [];
        this.lastWrites.set(tx, last);
        try {
          const answer = await work(tx, true, this);
          for (const write of last) await write();
          return answer;
        } finally {
          this.lastWrites.delete(tx);
        }
      });
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push(this.unit(work, options, resolve, reject));
      this.startGroup();
    });
  }

  /**
   * Inserts a row in `tx` at once, as its own statement: outside a group (a unit on PostgreSQL, a
   * unit running again alone, any other transaction). A unit of a group inserts through the `rows`
   * it is given instead: its rows then go in with the rows of the other units (one multi-row
   * INSERT per table, tables in their `order`, just before the commit), and only if it succeeds.
   * Either way the insert is the last thing the unit writes.
   */
  async insertRow(tx: EntityManager, table: SqlRowTable, values: readonly SqlValue[]): Promise<void> {
    if (values.length !== table.params) throw new Error(`A row of ${table.name} has ${table.params} values, not ${values.length}.`);
    if (this.groupTx && tx === this.groupTx) throw new Error('GroupCommit.insertRow: a unit of a group inserts its rows through the `rows` its work is given.');
    if (!this.sql) throw new Error('GroupCommit.insertRow: this group commit has no prepared statements.');
    const changed = await this.sql.run(sqlInsertRows(table, 1), values, tx);
    if (changed !== 1) throw new Error(`The insert into ${table.name} wrote ${changed} rows instead of 1.`);
  }

  /**
   * Runs one write statement as a write of its own and resolves with the rows it changed, once
   * committed: not grouped, with no transaction around it (a statement is atomic by itself: no
   * `BEGIN` and `COMMIT`, two round trips fewer on PostgreSQL); grouped, as a unit of the next group
   * (`options` as for `run`).
   */
  runOne(statement: SqlStatement, params: readonly SqlValue[], options: GroupWorkOptions = {}): Promise<number> {
    const sql = this.sql;
    if (!sql) return Promise.reject(new Error('GroupCommit.runOne: this group commit has no prepared statements.'));
    if (this.grouped) return this.run((tx) => sql.run(statement, params, tx), options);
    return sql.run(statement, params);
  }

  /** Inserts one row of `table` as a write of its own (see `runOne`). */
  async insertOne(table: SqlRowTable, values: readonly SqlValue[]): Promise<void> {
    if (values.length !== table.params) throw new Error(`A row of ${table.name} has ${table.params} values, not ${values.length}.`);
    const changed = await this.runOne(sqlInsertRows(table, 1), values, { concurrent: true });
    if (changed !== 1) throw new Error(`The insert into ${table.name} wrote ${changed} rows instead of 1.`);
  }

  /**
   * Not grouped (PostgreSQL), with `tx` the transaction of a unit of `run`: `write` runs after the
   * unit's work, just before its commit (in the order of the calls). Otherwise at once. See
   * `RowSink.atEnd`.
   */
  async atEnd(tx: EntityManager, write: () => Promise<void>): Promise<void> {
    const last = this.lastWrites.get(tx);
    if (last) last.push(write);
    else await write();
  }

  /** The `rows` of a unit of the group executing in `tx`: its rows wait in `into`; any other manager's are inserted at once. */
  private unitSink(tx: EntityManager, into: UnitRows): RowSink {
    return {
      insertRow: async (em, table, values) => {
        if (em !== tx) return this.insertRow(em, table, values);
        if (values.length !== table.params) throw new Error(`A row of ${table.name} has ${table.params} values, not ${values.length}.`);
        const pending = into.get(table);
        if (pending) pending.push(...values);
        else into.set(table, [...values]);
      },
    };
  }

  /** Writes the rows the units that succeeded deferred, table by table in their order, in unit order within a table. */
  private async insertRows(tx: EntityManager, units: readonly (UnitRows | undefined)[]): Promise<void> {
    const rows = new Map<SqlRowTable, SqlValue[]>();
    for (const unit of units) {
      if (!unit) continue;
      for (const [table, values] of unit) {
        const pending = rows.get(table);
        if (pending) for (const value of values) pending.push(value);
        else rows.set(table, values);
      }
    }
    for (const [table, values] of [...rows].sort(([a], [b]) => a.order - b.order)) {
      const count = values.length / table.params;
      const most = rowsPerInsert(table);
      for (let first = 0; first < count; first += most) {
        const n = Math.min(most, count - first);
        const changed = await this.sql!.run(sqlInsertRows(table, n), values.slice(first * table.params, (first + n) * table.params), tx);
        if (changed !== n) throw new Error(`The insert into ${table.name} wrote ${changed} rows instead of ${n}.`);
      }
    }
  }

  /** `run` through `lone`; a unit that wrote nothing goes first in the next group. */
  private async runLone<T>(work: GroupWork<T>, options: GroupWorkOptions, lone: LoneWrite<T>): Promise<T> {
    this.lonesInFlight++;
    let wrote: { value: T } | null;
    try {
      wrote = await lone();
    } catch (error) {
      // The units that queued behind it go on.
      this.lonesInFlight--;
      this.startGroup();
      throw error;
    }
    this.lonesInFlight--;
    if (wrote) {
      this.startGroup();
      return wrote.value;
    }
    const answer = new Promise<T>((resolve, reject) => {
      this.queue.unshift(this.unit(work, options, resolve, reject));
    });
    this.startGroup();
    return answer;
  }

  /** A queued unit of `work`, answering through `resolve` and `reject`. */
  private unit<T>(work: GroupWork<T>, options: GroupWorkOptions, resolve: (value: T) => void, reject: (error: unknown) => void): Unit {
    return { work, atomic: options.atomic ?? false, concurrent: this.interleave && (options.concurrent ?? false), resolve: resolve as (value: unknown) => void, reject };
  }

  /** Executes the queued units once no lone write is under way (a lone write and a group never meet on a row). */
  private startGroup(): void {
    if (!this.draining && this.lonesInFlight === 0 && this.queue.length) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length) await this.commitGroup();
    } finally {
      this.draining = false;
    }
  }

  private async commitGroup(): Promise<void> {
    const taken: Unit[] = [];
    const answers: { ok: boolean; value: unknown }[] = [];
    /** Units of `taken` that asked to run alone: queued again, answered there. */
    const superseded = new Set<number>();
    /** The rows each unit of `taken` deferred; a unit that failed has none. */
    const unitRows: (UnitRows | undefined)[] = [];
    let redo = false;
    try {
      await inTransaction(this.fork(), async (tx) => {
        this.groupTx = tx;
        /** Concurrent units still executing. */
        const inFlight = new Set<Promise<void>>();
        let failure: { error: unknown } | null = null;
        /** Executes a unit, records its answer; never rejects (a failure that spoils the group is kept in `failure`). */
        const execute = (unit: Unit, index: number): Promise<void> => {
          const own: UnitRows = new Map();
          unitRows[index] = own;
          return unit.work(tx, !unit.concurrent, this.unitSink(tx, own)).then(
            (value) => {
              answers[index] = { ok: true, value };
            },
            (error: unknown) => {
              // What it deferred goes nowhere: an atomic failure leaves nothing of it, the others redo the group.
              unitRows[index] = undefined;
              if (error instanceof RunAlone && unit.concurrent) {
                // It wrote nothing: it goes again, alone (in this group when there is room).
                answers[index] = { ok: false, value: error };
                superseded.add(index);
                this.queue.unshift({ ...unit, concurrent: false });
                return;
              }
              answers[index] = { ok: false, value: error };
              if (!(typeof unit.atomic === 'function' ? unit.atomic(error) : unit.atomic)) failure ??= { error };
            },
          );
        };
        const settleInFlight = async () => {
          while (inFlight.size) await Promise.all(inFlight);
        };
        // Units that arrive while the group executes join it (up to its size).
        for (;;) {
          while (this.queue.length && taken.length < MAX_GROUP && !failure) {
            const unit = this.queue.shift()!;
            const index = taken.push(unit) - 1;
            if (unit.concurrent) {
              const running: Promise<void> = execute(unit, index).finally(() => inFlight.delete(running));
              inFlight.add(running);
            } else {
              // A unit that runs alone waits for the concurrent ones before it.
              await settleInFlight();
              if (!failure) await execute(unit, index);
            }
          }
          if (failure || !inFlight.size) break;
          // One of the concurrent units ended: take in what arrived meanwhile.
          await Promise.race(inFlight);
        }
        await settleInFlight();
        if (failure) {
          redo = true;
          throw (failure as { error: unknown }).error;
        }
        if (answers.some((answer, index) => !answer.ok && !superseded.has(index))) {
          // A unit failed atomically. On PostgreSQL a statement that failed aborts the whole
          // transaction, and COMMIT then rolls back without an error: one statement tells.
          try {
            await tx.getConnection().execute('select 1', [], 'all', tx.getTransactionContext());
          } catch (error) {
            redo = true;
            throw error;
          }
        }
        this.groupTx = null;
        try {
          await this.insertRows(tx, unitRows);
        } catch (error) {
          // One unit's rows broke the insert: find which, alone.
          redo = true;
          throw error;
        }
      });
    } catch (error) {
      this.groupTx = null;
      if (!redo) {
        // The commit itself failed: nothing of the group is stored.
        for (const unit of taken) unit.reject(error);
        return;
      }
      // A unit failed halfway: the group was rolled back; each unit goes again in a transaction of its own.
      for (const [index, unit] of taken.entries()) {
        if (superseded.has(index)) continue;
        try {
          unit.resolve(await inTransaction(this.fork(), (tx) => unit.work(tx, true, this)));
        } catch (failure) {
          unit.reject(failure);
        }
      }
      return;
    }
    taken.forEach((unit, i) => {
      if (superseded.has(i)) return;
      if (answers[i]!.ok) unit.resolve(answers[i]!.value);
      else unit.reject(answers[i]!.value);
    });
  }
}
