import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { PreparedStatements, SqlStatement, SqlValue } from '@trellis/core';
import { knexClientFor, type KnexClient } from '@trellis/db-mikro-orm';

/** knex's client (or a transaction's client), which hands out the ORM's one SQLite connection. */
type ConnectionSource = KnexClient;

/**
 * The pool's one connection when nothing holds it and nobody waits for it: a synchronous
 * statement can run on it at once, since no other work can start before it ends. Otherwise
 * (a transaction or an ORM query holds it) undefined, and the statement queues for it.
 */
function idleConnection(source: ConnectionSource): object | undefined {
  const pool = source.pool;
  if (!pool || pool.numUsed() !== 0 || pool.numPendingAcquires() !== 0 || pool.numPendingCreates() !== 0 || pool.free.length !== 1) return undefined;
  return pool.free[0]!.resource;
}

/** better-sqlite3's `Database` and `Statement` (synchronous). */
interface BetterDatabase {
  prepare(text: string): BetterStatement;
}
/** A statement run once (`execute`) on a sqlite3 connection. */
interface AsyncOnce {
  all(text: string, params: unknown[], callback: (error: Error | null, rows: unknown[]) => void): void;
}
interface BetterStatement {
  readonly reader: boolean;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
}

/** sqlite3's `Database` and `Statement` (asynchronous, callbacks). */
interface AsyncDatabase {
  prepare(text: string, callback: (error: Error | null) => void): AsyncStatement;
}
/** A prepared copy of a statement and the calls it has under way. */
interface AsyncCopy {
  ready: Promise<AsyncStatement>;
  busy: number;
}
/** Prepared copies of one statement per connection at most. */
const MAX_COPIES = 16;

interface AsyncStatement {
  finalize(callback: (error: Error | null) => void): void;
  all(params: unknown[], callback: (error: Error | null, rows: unknown[]) => void): void;
  run(params: unknown[], callback: (this: { changes: number }, error: Error | null) => void): void;
}

export type SqliteDriverName = 'better-sqlite3' | 'sqlite3';

/** The statements kept prepared on each asynchronous connection, finalized before it closes. */
const keptStatements = new WeakMap<object, Array<Promise<AsyncStatement>>>();

/**
 * Finalizes the statements kept prepared on a `sqlite3` connection. sqlite3's `close` fails
 * (SQLITE_BUSY) while any statement is not finalized, and the pool ignores that failure: the
 * database stayed open after the host stopped, its WAL neither checkpointed nor removed.
 * (better-sqlite3 finalizes its statements itself when it closes.)
 */
export async function finalizeKeptStatements(connection: object): Promise<void> {
  const kept = keptStatements.get(connection) ?? [];
  keptStatements.delete(connection);
  await Promise.all(
    kept.map(async (ready) => {
      const statement = await ready.catch(() => undefined);
      if (statement) await new Promise<void>((resolve) => statement.finalize(() => resolve()));
    }),
  );
}

/** SQLite has no Date or boolean: the ORM stores milliseconds and 0/1, and so do these statements. */
function bindable(params: readonly SqlValue[]): unknown[] {
  return params.map((value) => (value instanceof Date ? value.getTime() : typeof value === 'boolean' ? (value ? 1 : 0) : value));
}

/**
 * Prepared statements on the ORM's SQLite connection: prepared on first use per connection and
 * kept (`execute`'s are not kept). The connection comes from knex's pool (one connection: a statement waits while a
 * transaction holds it, as ORM queries do) or, for an entity manager in a transaction, from that
 * transaction.
 */
export function sqliteStatements(orm: MikroORM, driver: SqliteDriverName): PreparedStatements {
  const prepared = new WeakMap<object, Map<string, unknown>>();
  const source = (em?: EntityManager): ConnectionSource => knexClientFor(orm, em?.getTransactionContext());

  const statementsOf = (connection: object): Map<string, unknown> => {
    let statements = prepared.get(connection);
    if (!statements) prepared.set(connection, (statements = new Map()));
    return statements;
  };

  const cached = <S>(connection: object, statement: SqlStatement, prepare: () => S): S => {
    const statements = statementsOf(connection);
    let found = statements.get(statement.name) as S | undefined;
    if (!found) statements.set(statement.name, (found = prepare()));
    return found;
  };

  const betterStatement = (connection: object, statement: SqlStatement) =>
    cached(connection, statement, () => (connection as BetterDatabase).prepare(statement.text));

  /**
   * The prepared copies of a statement on an asynchronous connection. sqlite3 runs one call of a
   * `Statement` at a time and starts the next one only from this thread, once the last one's
   * answer was handled here; several copies let concurrent calls of the same statement (the units
   * of a group commit) go to the connection one right after the other instead.
   */
  const asyncCopies = new WeakMap<object, Map<string, AsyncCopy[]>>();
  const copiesOf = (connection: object, statement: SqlStatement): AsyncCopy[] => {
    let byName = asyncCopies.get(connection);
    if (!byName) asyncCopies.set(connection, (byName = new Map()));
    let copies = byName.get(statement.name);
    if (!copies) byName.set(statement.name, (copies = []));
    return copies;
  };
  /** A copy of `statement` not in use (prepared when all are busy, up to `MAX_COPIES`), marked busy. */
  function takeAsync(connection: object, statement: SqlStatement): AsyncCopy {
    const copies = copiesOf(connection, statement);
    for (const copy of copies) {
      if (copy.busy === 0) {
        copy.busy = 1;
        return copy;
      }
    }
    if (copies.length >= MAX_COPIES) {
      // All busy: queue on the least busy one (sqlite3 runs its calls in order).
      let least = copies[0]!;
      for (const copy of copies) if (copy.busy < least.busy) least = copy;
      least.busy++;
      return least;
    }
    const copy: AsyncCopy = {
      ready: new Promise<AsyncStatement>((resolve, reject) => {
        const prepared: AsyncStatement = (connection as AsyncDatabase).prepare(statement.text, (error) => (error ? reject(error) : resolve(prepared)));
      }),
      busy: 1,
    };
    copies.push(copy);
    let kept = keptStatements.get(connection);
    if (!kept) keptStatements.set(connection, (kept = []));
    kept.push(copy.ready);
    // A failed preparation is not kept: the next call tries again.
    copy.ready.catch(() => {
      const at = copies.indexOf(copy);
      if (at >= 0) copies.splice(at, 1);
    });
    return copy;
  }

  /** `write`: the number of rows changed; `read`: the rows; `once`: the rows, with the statement not kept. */
  type Mode = 'read' | 'write' | 'once';

  function runBetter<T>(connection: object, statement: SqlStatement, values: unknown[], mode: Mode): T {
    if (mode === 'once') {
      const once = (connection as BetterDatabase).prepare(statement.text);
      if (once.reader) return once.all(...values) as T;
      once.run(...values);
      return [] as T;
    }
    const prepared = betterStatement(connection, statement);
    return (mode === 'write' ? prepared.run(...values).changes : prepared.all(...values)) as T;
  }

  async function execute<T>(statement: SqlStatement, params: readonly SqlValue[], em: EntityManager | undefined, mode: Mode): Promise<T> {
    const from = source(em);
    if (driver === 'better-sqlite3') {
      // The pool's round trip (a timer and a few promises) costs more than the statement itself.
      const idle = idleConnection(from);
      if (idle) return runBetter<T>(idle, statement, bindable(params), mode);
    }
    const connection = await from.acquireConnection();
    try {
      const values = bindable(params);
      if (driver === 'better-sqlite3') return runBetter<T>(connection, statement, values, mode);
      if (mode === 'once') {
        return await new Promise<T>((resolve, reject) => (connection as AsyncOnce).all(statement.text, values, (error, rows) => (error ? reject(error) : resolve(rows as T))));
      }
      const write = mode === 'write';
      const copy = takeAsync(connection, statement);
      try {
        const prepared = await copy.ready;
        return await new Promise<T>((resolve, reject) => {
          if (write) {
            prepared.run(values, function (error) {
              if (error) reject(error);
              else resolve(this.changes as T);
            });
          } else {
            prepared.all(values, (error, rows) => (error ? reject(error) : resolve(rows as T)));
          }
        });
      } finally {
        copy.busy--;
      }
    } finally {
      await from.releaseConnection(connection);
    }
  }

  return {
    dialect: 'sqlite',
    all: <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => execute<R[]>(statement, params, em, 'read'),
    first: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute<R[]>(statement, params, em, 'read'))[0],
    run: (statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => execute<number>(statement, params, em, 'write'),
    execute: <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => execute<R[]>(statement, params, em, 'once'),
  };
}
