import type { EntityClass, EntityManager } from '@mikro-orm/core';
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
}

interface Unit {
  work: (tx: EntityManager) => Promise<unknown>;
  atomic: boolean | ((error: unknown) => boolean);
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Units of work one group commit takes at most. */
const MAX_GROUP = 64;

/**
 * Group commit for writes on SQLite. SQLite has one writer and, with `synchronous=FULL`, every
 * commit is a sync of its WAL (milliseconds), so short transactions that each commit alone are
 * bounded by the disk, not by their work. Here units of work that arrive while a commit is under
 * way (or in the same tick as the first) queue up and are executed one after the other in the
 * next transaction, which commits them all at once: each unit still runs alone against the
 * database (one connection, serial), and each caller's promise resolves only once its writes are
 * committed. A lone unit costs what its own transaction would (begin, its statements, commit).
 *
 * A unit must only use the manager it is given (another connection would wait for this one's
 * transaction) and must not wait for anything but the database. On PostgreSQL (many connections,
 * each commit its own) `grouped` is false and a unit is a transaction of its own.
 *
 * Used by the OAuth token endpoint (refresh-token rotations) and the runs (a run's record, its
 * claim, its events and checkpoints, its credit hold and settlement).
 */
export class GroupCommit {
  private queue: Unit[] = [];
  private draining = false;
  /** Rows of `insertLater` waiting for the end of the group executing now. */
  private deferred: Map<EntityClass<object>, object[]> | null = null;

  constructor(
    private readonly fork: () => EntityManager,
    private readonly grouped: boolean,
  ) {}

  /** Runs `work` in a transaction (shared with others on SQLite); resolves with its answer once committed. */
  run<T>(work: (tx: EntityManager) => Promise<T>, options: GroupWorkOptions = {}): Promise<T> {
    if (!this.grouped) return inTransaction(this.fork(), work);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, atomic: options.atomic ?? false, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) void this.drain();
    });
  }

  /**
   * Inserts `rows` in the unit's transaction: in a group, together with the rows of the other
   * units (one multi-row INSERT per table just before the commit); otherwise at once. The last
   * thing a unit does (what it wrote before cannot take these rows back).
   */
  async insertLater<T extends object>(tx: EntityManager, entity: EntityClass<T>, rows: T[]): Promise<void> {
    if (!rows.length) return;
    if (!this.deferred) return void (await tx.insertMany(entity, rows));
    const pending = this.deferred.get(entity as EntityClass<object>);
    if (pending) pending.push(...rows);
    else this.deferred.set(entity as EntityClass<object>, [...rows]);
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
    let redo = false;
    try {
      await inTransaction(this.fork(), async (tx) => {
        this.deferred = new Map();
        // Units that arrive while the group executes join it (up to its size).
        while (this.queue.length && taken.length < MAX_GROUP) {
          const unit = this.queue.shift()!;
          taken.push(unit);
          try {
            answers.push({ ok: true, value: await unit.work(tx) });
          } catch (error) {
            answers.push({ ok: false, value: error });
            if (!(typeof unit.atomic === 'function' ? unit.atomic(error) : unit.atomic)) {
              redo = true;
              throw error;
            }
          }
        }
        const deferred = this.deferred;
        this.deferred = null;
        try {
          for (const [entity, rows] of deferred) await tx.insertMany(entity, rows);
        } catch (error) {
          // One unit's rows broke the insert: find which, alone.
          redo = true;
          throw error;
        }
      });
    } catch (error) {
      this.deferred = null;
      if (!redo) {
        // The commit itself failed: nothing of the group is stored.
        for (const unit of taken) unit.reject(error);
        return;
      }
      // A unit failed halfway: the group was rolled back; each unit goes again in a transaction of its own.
      for (const unit of taken) {
        try {
          unit.resolve(await inTransaction(this.fork(), unit.work));
        } catch (failure) {
          unit.reject(failure);
        }
      }
      return;
    }
    taken.forEach((unit, i) => (answers[i]!.ok ? unit.resolve(answers[i]!.value) : unit.reject(answers[i]!.value)));
  }
}
