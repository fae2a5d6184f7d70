import type { AnyEntity, EntityClass, EntityManager, EntitySchema, MikroORM, Options } from '@mikro-orm/core';
import type { RunStore, RunStoreDeps } from './run-store.js';

export type EntityDefinition = EntityClass<AnyEntity> | EntitySchema<any, any>;

export type Dialect = 'sqlite' | 'postgresql';

export const dialects: readonly Dialect[] = ['sqlite', 'postgresql'];

/**
 * One schema change, written once per dialect. Modules declare their migrations next to their
 * entities; the kernel runs every loaded module's migrations in name order, so names start with
 * a UTC timestamp (`20261122120000_identity`). Generate them with `pnpm migration:create`.
 */
export interface MigrationDefinition {
  name: string;
  up: Readonly<Record<Dialect, readonly string[]>>;
  down: Readonly<Record<Dialect, readonly string[]>>;
}

/** MikroORM's migration entry: a name and a class extending its `Migration`. */
export type MigrationEntry = { name: string; class: new (...args: any[]) => unknown };

/** What the database connection pool holds at one moment (`trellis_db_pool_connections`). */
export interface DatabasePoolState {
  used: number;
  free: number;
  pending: number;
}

/**
 * The Database port: an adapter package supplies the MikroORM driver and its options for one
 * dialect. The kernel adds the entities and migrations of the loaded modules.
 *
 * Whatever Trellis needs from the ORM or its driver beyond MikroORM's public API (the driver's
 * connections, the pool, members MikroORM keeps private) goes through a method of this port, so
 * that it lives in the adapter that owns the dependency and an upgrade that changes those
 * internals breaks that adapter (and its tests), never core. The optional methods have a portable
 * fallback, named on each.
 */
export interface DatabaseAdapter {
  readonly dialect: Dialect;
  /** Human-readable target, with any password removed (`sqlite:./trellis.db`). */
  readonly description: string;
  /**
   * Awaited before the first connection, so an adapter can load its driver on demand (the
   * reference host imports the adapter package named by `database.url` here).
   */
  prepare?(): Promise<void>;
  /**
   * MikroORM options without `entities`; must include `driver` and the Migrator extension. The
   * bundled adapters also set `entityManager` to their driver's entity manager with a unit of work
   * whose flush enters no async context (`@trellis/db-mikro-orm`): MikroORM's own flush enters an
   * `AsyncLocalStorage`, which on Node 20 switches promise hooks on for the whole process. Without
   * it, MikroORM's own entity manager is used: the same behaviour, every `await` slower on Node 20
   * after the first write.
   */
  ormOptions(migrations: readonly MigrationDefinition[]): Options;
  /** Called once the ORM is up, before migrations (pragmas, extensions). */
  afterConnect?(orm: MikroORM): Promise<void>;
  /**
   * The prepared-statement runner of hot paths (credential checks, token rotation), on the ORM's
   * own connections and transactions. Called once the ORM is up.
   */
  statements(orm: MikroORM): PreparedStatements;
  /**
   * What the ORM's connection pool holds now, for the `trellis_db_pool_connections` metric. Without
   * it (or when it answers undefined) that metric has no samples.
   */
  poolStats?(orm: MikroORM): DatabasePoolState | undefined;
  /**
   * The unit-of-work step that ends `inTransaction` (see kernel/transaction.ts): makes what the
   * committed transaction fork `fork` knows visible to `parent`, the entity manager it was forked
   * from, as `em.transactional` does. Entities in `deleted` (removed by the transaction) leave
   * `parent`'s identity map; an entity `parent` holds another object for gets the fork's committed
   * data and change-tracking snapshot on that object (so `parent` neither shows stale values nor
   * writes them again), unless the fork only has an uninitialized reference to it; any other
   * entity joins `parent`'s identity map. Without it `inTransaction` runs through MikroORM's
   * `em.transactional`: the same behaviour, with MikroORM's async transaction context entered.
   */
  mergeCommitted?(parent: EntityManager, fork: EntityManager, deleted: readonly object[]): void;
  /**
   * The store of runs on this database (see the RunStore port), made once the ORM is up. Without
   * it the runtime uses the portable store (`SqlRunStore`, no group commit, hold first), which
   * the adapters' own stores build on (`SqliteRunStore`, `PgRunStore`).
   */
  runStore?(deps: RunStoreDeps): RunStore;
}

interface MigrationBase {
  addSql(sql: string): void;
}

/**
 * Turns migration definitions into MikroORM migration classes for one dialect. `base` is
 * `Migration` from `@mikro-orm/migrations`, passed in by the adapter so core stays free of it.
 */
export function toMigrationEntries(
  definitions: readonly MigrationDefinition[],
  dialect: Dialect,
  base: abstract new (...args: any[]) => MigrationBase,
): MigrationEntry[] {
  return [...definitions]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((definition) => {
      const Base = base as unknown as new (...args: any[]) => MigrationBase;
      class DefinedMigration extends Base {
        async up(): Promise<void> {
          for (const sql of definition.up[dialect]) this.addSql(sql);
        }
        async down(): Promise<void> {
          for (const sql of definition.down[dialect]) this.addSql(sql);
        }
      }
      Object.defineProperty(DefinedMigration, 'name', { value: `Migration_${definition.name}` });
      return { name: definition.name, class: DefinedMigration };
    });
}


/**
 * One SQL statement of a hot path, prepared once per connection and reused: SQLite keeps the
 * driver's prepared statement, PostgreSQL a named prepared statement (`pg`'s `{ name, text }`).
 * `text` is written once for both dialects: `?` placeholders (PostgreSQL gets `$1`, `$2`, ...),
 * double-quoted identifiers, no dialect-specific functions. Values bound to it are strings,
 * numbers, `null`, booleans and `Date`s (stored as each dialect's ORM mapping stores them:
 * milliseconds and 0/1 on SQLite, `timestamptz` and `boolean` on PostgreSQL). Results come back
 * in the dialect's raw form; read them with {@link sqlDate} and {@link sqlBool}.
 */
export interface SqlStatement {
  /** Unique in the process (`identity.user_by_id`); PostgreSQL's prepared statement name. */
  readonly name: string;
  readonly text: string;
}

/** Declares a statement of a query module (`const byId = sqlStatement('identity.user_by_id', 'select ...')`). */
export function sqlStatement(name: string, text: string): SqlStatement {
  return Object.freeze({ name, text });
}

/** A value bound to a statement's placeholder. */
export type SqlValue = string | number | boolean | Date | null;

/**
 * A table a hot path inserts rows into, one at a time or many in one statement: `into` is
 * `"table" ("a", "b", ...)`, `row` the values of one row (`(?, ?, 'held', null, ?)`: placeholders
 * and literals), `order` the table's place when rows of several tables are written together
 * (referenced tables first).
 */
export interface SqlRowTable {
  readonly name: string;
  readonly into: string;
  readonly row: string;
  readonly order: number;
  /** Placeholders in `row`. */
  readonly params: number;
}

export function sqlRowTable(name: string, into: string, row: string, order: number): SqlRowTable {
  return Object.freeze({ name, into, row, order, params: row.split('?').length - 1 });
}

const rowInserts = new WeakMap<SqlRowTable, SqlStatement[]>();

/** The statement that inserts `count` rows into `table` (`table.name#count`), made once per count. */
export function sqlInsertRows(table: SqlRowTable, count: number): SqlStatement {
  let byCount = rowInserts.get(table);
  if (!byCount) rowInserts.set(table, (byCount = []));
  return (byCount[count] ??= sqlStatement(`${table.name}#${count}`, `insert into ${table.into} values ${Array.from({ length: count }, () => table.row).join(', ')}`));
}

/** Rows of one statement at most, for `table`: SQLite's oldest limit of 999 placeholders, and 64 rows. */
export const rowsPerInsert = (table: SqlRowTable): number => Math.max(1, Math.min(64, Math.floor(999 / Math.max(1, table.params))));

/**
 * Where a hot path's rows go: into the bulk insert that ends the current group commit (the `rows`
 * a unit of `GroupCommit` is given: written only if the unit succeeds), or at once (see
 * `GroupCommit.insertRow`). The insert is the last thing its caller writes: nothing it writes
 * after may depend on the row existing yet.
 */
export interface RowSink {
  insertRow(em: EntityManager, table: SqlRowTable, values: readonly SqlValue[]): Promise<void>;
  /**
   * Runs `write` as the last statements of `em`'s unit of work, just before its commit, when `em`
   * is the transaction of a unit that commits alone (PostgreSQL); otherwise at once. For a write
   * that takes a row lock others wait for: the lock is then held for the commit only. A failure
   * of `write` fails (and rolls back) the unit.
   */
  atEnd?(em: EntityManager, write: () => Promise<void>): Promise<void>;
}

/**
 * Runs prepared statements on the ORM's connections. Without `em`, or with an entity manager that
 * is not in a transaction, a statement takes a connection from the pool for its run; with an
 * entity manager inside `inTransaction`, it runs on that transaction's connection, so it sees and
 * joins the transaction's work.
 */
export interface PreparedStatements {
  readonly dialect: Dialect;
  /** Every row the statement returns. */
  all<R = Record<string, unknown>>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager): Promise<R[]>;
  /** The first row, or undefined. */
  first<R = Record<string, unknown>>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager): Promise<R | undefined>;
  /** Runs a write; resolves with the number of rows it changed. */
  run(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager): Promise<number>;
  /**
   * Runs a statement once, without preparing it (for a text that varies, such as an `update` of
   * the columns that changed, or one that runs rarely), and resolves with the rows it returns (none
   * for a write without `returning`). Its values are bound as parameters, never formatted into the
   * SQL text, so a large value (a document's JSON) goes to the driver once, unescaped. Same
   * placeholders, values and connection rules as the other methods; `statement.name` only names it
   * in metrics and traces. Optional: without it, such statements run through MikroORM's public
   * `Connection.execute`, which formats the values into the SQL text (the same results, slower for
   * large values). The kernel's runner (`preparedStatementsServiceIdentifier`) always has it.
   */
  execute?<R = Record<string, unknown>>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager): Promise<R[]>;
}

/** A `datetime` column as read by a prepared statement (milliseconds or ISO text on SQLite, a `Date` on PostgreSQL). */
export function sqlDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  if (typeof value === 'string') return new Date(/^\d+$/.test(value) ? Number(value) : value);
  throw new TypeError(`Not a datetime column value: ${String(value)}`);
}

/** A `boolean` column as read by a prepared statement (0/1 on SQLite). */
export function sqlBool(value: unknown): boolean {
  return value === true || value === 1 || value === 1n || value === '1' || value === 't' || value === 'true';
}
