import type { EntityManager, MikroORM } from '@mikro-orm/core';
import {
  bytesToVector,
  compileVdbFilter,
  cosineDistance,
  dialectOf,
  inTransaction,
  TopK,
  vdbRecordTable as t,
  vectorToBytes,
  type VdbFilter,
  type VectorEntry,
  type VectorHit,
  type VectorSearchRequest,
  type VectorStore,
} from '@trellis/core';
import { randomUUID } from 'node:crypto';
import { getLoadablePath } from 'sqlite-vec';
import { QuantizedIndex, type IndexPage } from './quantized-index.js';

export { QuantizedIndex, type IndexPage } from './quantized-index.js';
export { wasmSimdAvailable } from './dot-kernel.js';

export interface SqliteVecVectorStoreOptions {
  /** Path of the sqlite-vec loadable extension (default: the one shipped by the `sqlite-vec` package for this platform). */
  extensionPath?: string;
  /**
   * Whether filtered searches first pick candidates from the term index (default true). Off, every
   * filtered search scans the collection's rows (the benchmark's "before").
   */
  termIndex?: boolean;
  /**
   * Whether unfiltered searches use the in-memory quantised index (default true): an int8 copy
   * of each searched collection's vectors, a first pass naming a superset of the exact top k,
   * then exact cosine re-ranking of those from the records table. Off, they use the `vec0` mirror.
   */
  memoryIndex?: boolean;
  /** Most bytes the in-memory indexes of all collections may hold (default 256 MiB); least recently searched ones are dropped first, and a collection that alone needs more searches its `vec0` mirror. */
  memoryIndexBytes?: number;
  /** Whether the first pass may use WebAssembly SIMD (default true; false: the same integer sums in JavaScript). */
  simd?: boolean;
  /**
   * Collections with at least this many vectors build their in-memory index in the background
   * (default 10,000, about 0.13 s of building): the search that finds the index missing, and those
   * that follow until it is ready, answer from the `vec0` mirror (exact, slower) instead of waiting.
   * Smaller collections build it inside their first search.
   */
  backgroundBuildRows?: number;
  /**
   * Whether the in-memory index of a collection of at least `backgroundBuildRows` vectors is saved
   * in the database (its int8 codes, about `dimension` + 60 bytes per vector, in
   * `tool_vdb_index_snapshots` and `tool_vdb_index_pages`) once built and again as writes move the
   * change log on, so that after a restart it is loaded (and the log's changes since applied)
   * instead of built again: in the background from `start` (most recently saved first, as many as
   * `memoryIndexBytes` holds), or by the collection's first search (default true).
   */
  persistIndex?: boolean;
}

/**
 * The raw connection behind MikroORM's SQLite driver (knex): `sqlite3` (asynchronous
 * `loadExtension(path, callback)`) or `better-sqlite3` (synchronous `loadExtension(path)`, and a
 * `pragma` method).
 */
interface Sqlite3Connection {
  loadExtension(path: string, callback?: (error: Error | null) => void): unknown;
  pragma?: unknown;
}

/** One collection's in-memory index. */
interface LoadedIndex {
  index: QuantizedIndex;
  collectionId: string;
  dimension: number;
  used: number;
  /** The saved snapshot it was restored from or last saved as, while its vectors are those (`changed` false). */
  saved?: { position: number; generation: string };
  changed?: boolean;
  /** The change-log position of its last save (attempted), if any. */
  attempted?: number;
}

interface KnexClient {
  acquireConnection(): Promise<Sqlite3Connection>;
  releaseConnection(connection: Sqlite3Connection): Promise<void>;
}

/**
 * The VectorStore the host uses on SQLite: exact cosine k-NN with sqlite-vec inside the
 * application's SQLite database.
 *
 * - Filtered searches: one statement over the records table, the filter compiled to SQL in the
 *   WHERE clause and `vec_distance_cosine(embedding, query)` in ORDER BY, so a search returns
 *   `limit` hits whenever that many records match. When the filter names string tags or string
 *   values of top-level metadata keys (equality, `$in`, `$contains`, `$all`), the term index
 *   `tool_vdb_terms` first narrows the rows to a superset of the matches (`record_id IN (...)`);
 *   the full filter still decides, so results stay exact. The index is kept by triggers on the
 *   records table (every write path, bulk loads included) and filled at start when created.
 * - Unfiltered searches: the collection's in-memory int8 index (`QuantizedIndex`: a WebAssembly
 *   SIMD first pass with a proven error bound names a superset of the exact top k, re-ranked by
 *   exact cosine distance from the records table), kept in step with every committed write by the
 *   change log `tool_vdb_changes` that triggers on the records table fill (any writer, any
 *   process). Inside a transaction, or for a collection over `memoryIndexBytes`: sqlite-vec's
 *   `vec0` virtual table (one per dimension,
 *   `tool_vdb_unit_<dim>`, partitioned by collection), a brute-force scan over contiguous vector
 *   chunks, also exact. It holds the records' vectors scaled to unit length and ranks by L2
 *   distance, which orders unit vectors exactly as cosine distance does (cosine distance =
 *   L2² / 2) and which sqlite-vec computes faster than its cosine. Zero vectors (cosine distance 1
 *   to everything) are kept apart in `tool_vdb_zero` and merged in. Both are written by `upsert`
 *   and `remove` in the record's transaction, and re-synced at start.
 *
 * The extension is loaded into the ORM's connection at start (the driver's `loadExtension`);
 * Trellis's SQLite adapter keeps exactly one connection open for the life of the process.
 */
export class SqliteVecVectorStore implements VectorStore {
  readonly name = 'sqlite-vec';
  private readonly extensionPath: string;
  private readonly termIndex: boolean;
  private orm?: MikroORM;
  private readonly tables = new Set<string>();
  /** Each mirror's id lookup table: its sqlite-vec shadow table, or null for the mirror itself. */
  private readonly shadows = new Map<string, string | null>();
  private loading?: Promise<void>;
  private readonly memoryIndex: boolean;
  private readonly memoryIndexBytes: number;
  private readonly simd: boolean;
  private readonly backgroundBuildRows: number;
  private readonly persistIndex: boolean;
  /** The loading of the saved indexes that `start` begins. */
  private preloading: Promise<void> = Promise.resolve();
  /** Snapshots being written, by collection key. */
  private readonly saving = new Map<string, Promise<void>>();
  /** Background builds under way, by collection key. */
  private readonly building = new Map<string, Promise<void>>();
  /** Bumped by `close` and by dropping the indexes: a build begun before does not install its index. */
  private generation = 0;
  private readonly indexes = new Map<string, LoadedIndex>();
  /** The change-log position the in-memory indexes reflect (-1: not read yet). */
  private applied = -1;
  /** Collections too large for the budget, by key, with the change-log position of that decision. */
  private readonly declined = new Map<string, number>();
  private clock = 0;
  /** Catch-ups and index builds run one at a time (they read the log position and write the indexes). */
  private gate: Promise<unknown> = Promise.resolve();
  /** The background catch-up a search asked for, while it is due or running. */
  private catchingUp?: Promise<unknown>;
  /** The records the log named after the indexes' position at the last search: the next one's padding. */
  private recentChanges = 0;

  constructor(options: SqliteVecVectorStoreOptions = {}) {
    this.extensionPath = options.extensionPath ?? getLoadablePath();
    this.termIndex = options.termIndex ?? true;
    this.memoryIndex = options.memoryIndex ?? true;
    this.memoryIndexBytes = options.memoryIndexBytes ?? 256 * 1024 * 1024;
    this.simd = options.simd ?? true;
    this.backgroundBuildRows = options.backgroundBuildRows ?? 10_000;
    this.persistIndex = options.persistIndex ?? true;
  }

  async start(orm: MikroORM): Promise<void> {
    if (dialectOf(orm.em) !== 'sqlite') throw new Error('SqliteVecVectorStore needs the SQLite database adapter (@trellis/db-sqlite).');
    this.orm = orm;
    await this.load();
    await this.sync(orm.em.fork(), { all: false });
    // Not awaited: the host starts serving meanwhile (a search of a collection being loaded waits for it).
    this.preloading = this.preload(orm.em.fork());
  }

  /**
   * Loads the saved indexes, most recently saved first, as many as `memoryIndexBytes` holds, each
   * in the gate on its own (searches run between them). Failures are left to the searches (they
   * load or build the index themselves).
   */
  private async preload(em: EntityManager): Promise<void> {
    if (!this.memoryIndex || !this.persistIndex) return;
    const epoch = this.generation;
    try {
      const saved = (await this.exec(em, `SELECT collection_id AS collection, dimension, count FROM ${SNAPSHOTS} WHERE format = ? ORDER BY position DESC`, [SNAPSHOT_FORMAT])) as Array<{
        collection: string;
        dimension: number;
        count: number;
      }>;
      let room = this.memoryIndexBytes;
      for (const { collection, dimension, count } of saved) {
        const bytes = QuantizedIndex.estimateBytes(Number(dimension), Number(count));
        if (bytes > room) continue;
        const key = `${collection}/${Number(dimension)}`;
        const loaded = await this.exclusive(async () => {
          if (epoch !== this.generation || this.indexes.has(key) || this.building.has(key)) return null;
          return this.restore(em, key, collection, Number(dimension), await this.catchUp(em));
        });
        if (epoch !== this.generation) return;
        if (loaded) room -= loaded.index.bytes;
      }
    } catch {
      // The searches load or build what is missing.
    }
  }

  /**
   * Brings the `vec0` mirrors in line with the records table: adds the vectors of records written
   * while another store was bound (or by bulk loads) and drops those of deleted records. `all:
   * false` (what `start` runs) checks only the records the change log names since the last sync,
   * when it still reaches back that far.
   */
  async sync(em: EntityManager, options: { all?: boolean } = {}): Promise<void> {
    // Mirrors of earlier versions (raw vectors, cosine metric) are replaced by the unit-vector ones.
    const legacy = (await this.exec(em, "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'tool_vdb_vec_[0-9]*' AND sql LIKE '%USING vec0%'", [])) as Array<{ name: string }>;
    for (const { name } of legacy) await this.exec(em, `DROP TABLE ${name}`, []);
    await this.exec(em, `CREATE TABLE IF NOT EXISTS ${ZERO} (record_id text PRIMARY KEY, collection_id text NOT NULL, dimension integer NOT NULL)`, []);
    await this.exec(em, `CREATE INDEX IF NOT EXISTS ${ZERO}_collection_index ON ${ZERO} (collection_id, dimension, record_id)`, []);
    await this.ensureSnapshotTables(em);
    await this.ensureTermIndex(em);
    await this.ensureChangeLog(em);
    // Every write to the records table since the mirrors were last checked is in the change log
    // (whoever made it): at start (`all: false`), while the log reaches back that far, only the
    // records it names are checked; otherwise (first start, a log cut short, lost triggers), and
    // when called without options (after the mirror tables themselves were written to), all are.
    const { lo, hi } = await this.logPosition(em);
    const [state] = (await this.exec(em, `SELECT position FROM ${MIRROR_STATE} WHERE id = 1`, [])) as Array<{ position: number }>;
    const since = state ? Number(state.position) : null;
    if (options.all === false && since !== null && since <= hi && (since === hi || (lo !== null && lo <= since + 1))) await this.syncChanged(em, since, hi);
    else await this.syncAll(em);
    await this.exec(em, `INSERT INTO ${MIRROR_STATE} (id, position) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position`, [hi]);
    // Snapshots of collections that no longer hold a record, and pages no snapshot names (a save cut short).
    await this.exec(em, `DELETE FROM ${SNAPSHOTS} WHERE NOT EXISTS (SELECT 1 FROM ${t.table} r WHERE r.${t.collection} = ${SNAPSHOTS}.collection_id)`, []);
    await this.exec(em, `DELETE FROM ${PAGES} WHERE generation NOT IN (SELECT generation FROM ${SNAPSHOTS})`, []);
  }

  /** Adds the vectors of records the mirrors lack, and drops those of records gone, over the whole records table. */
  private async syncAll(em: EntityManager): Promise<void> {
    const dimensions = (await this.exec(em, `SELECT DISTINCT ${t.dimension} AS dimension FROM ${t.table}`, [])) as Array<{ dimension: number }>;
    for (const { dimension } of dimensions) {
      const table = await this.ensureTable(em, Number(dimension));
      const norm = `vec_distance_l2(r.${t.embedding}, zeroblob(${Number(dimension) * 4}))`;
      await this.exec(
        em,
        `INSERT INTO ${table} (record_id, collection_id, embedding) SELECT r.${t.id}, r.${t.collection}, vec_normalize(r.${t.embedding}) FROM ${t.table} r WHERE r.${t.dimension} = ? AND ${norm} > 0 AND r.${t.id} NOT IN (SELECT record_id FROM ${table})`,
        [Number(dimension)],
      );
      await this.exec(em, `INSERT OR IGNORE INTO ${ZERO} (record_id, collection_id, dimension) SELECT r.${t.id}, r.${t.collection}, r.${t.dimension} FROM ${t.table} r WHERE r.${t.dimension} = ? AND ${norm} = 0`, [Number(dimension)]);
    }
    for (const table of await this.mirrorTables(em)) {
      await this.exec(em, `DELETE FROM ${table} WHERE record_id NOT IN (SELECT ${t.id} FROM ${t.table})`, []);
    }
    await this.exec(em, `DELETE FROM ${ZERO} WHERE record_id NOT IN (SELECT ${t.id} FROM ${t.table})`, []);
  }

  /**
   * The same checks as `syncAll` for the records the change log names in (`from`, `to`] only: a
   * record the mirrors lack is added (to its dimension's mirror, or the zero table), one gone, or
   * now of another dimension or without a direction, is dropped where it was.
   */
  private async syncChanged(em: EntityManager, from: number, to: number): Promise<void> {
    const changed = (await this.exec(em, `SELECT DISTINCT record_id AS id FROM ${CHANGES} WHERE seq > ? AND seq <= ?`, [from, to])) as Array<{ id: string }>;
    const tables = await this.mirrorTables(em);
    for (let start = 0; start < changed.length; start += CHUNK) {
      const ids = changed.slice(start, start + CHUNK).map((row) => row.id);
      const marks = ids.map(() => '?').join(', ');
      const records = (await this.exec(
        em,
        `SELECT ${t.id} AS id, ${t.dimension} AS dimension, vec_distance_l2(${t.embedding}, zeroblob(length(${t.embedding}))) > 0 AS direction FROM ${t.table} WHERE ${t.id} IN (${marks})`,
        ids,
      )) as Array<{ id: string; dimension: number; direction: number }>;
      const want = new Map(records.map((row) => [row.id, row.direction ? mirrorTable(Number(row.dimension)) : ZERO]));
      const held = new Map<string, string[]>();
      for (const table of [...tables, ZERO]) {
        const lookup = table === ZERO ? { table: ZERO, column: 'record_id' } : await this.mirrorIds(em, table);
        for (const { id } of (await this.exec(em, `SELECT ${lookup.column} AS id FROM ${lookup.table} WHERE ${lookup.column} IN (${marks})`, ids)) as Array<{ id: string }>) {
          held.set(id, [...(held.get(id) ?? []), table]);
        }
      }
      const add = new Map<string, string[]>();
      for (const id of ids) {
        const target = want.get(id);
        for (const table of held.get(id) ?? []) if (table !== target) await this.exec(em, `DELETE FROM ${table} WHERE record_id = ?`, [id]);
        if (target && !(held.get(id) ?? []).includes(target)) add.set(target, [...(add.get(target) ?? []), id]);
      }
      for (const [table, missing] of add) {
        const params = missing.map(() => '?').join(', ');
        if (table === ZERO) {
          await this.exec(em, `INSERT OR IGNORE INTO ${ZERO} (record_id, collection_id, dimension) SELECT ${t.id}, ${t.collection}, ${t.dimension} FROM ${t.table} WHERE ${t.id} IN (${params})`, missing);
        } else {
          const dimension = Number(records.find((row) => row.id === missing[0])!.dimension);
          await this.ensureTable(em, dimension);
          await this.exec(
            em,
            `INSERT INTO ${table} (record_id, collection_id, embedding) SELECT ${t.id}, ${t.collection}, vec_normalize(${t.embedding}) FROM ${t.table} WHERE ${t.id} IN (${params})`,
            missing,
          );
        }
      }
    }
  }

  /** The saved in-memory indexes: one row per collection and dimension, and its pages of codes. */
  private async ensureSnapshotTables(em: EntityManager): Promise<void> {
    await this.exec(
      em,
      `CREATE TABLE IF NOT EXISTS ${SNAPSHOTS} (collection_id text NOT NULL, dimension integer NOT NULL, generation text NOT NULL, position integer NOT NULL, count integer NOT NULL, pages integer NOT NULL, format integer NOT NULL, PRIMARY KEY (collection_id, dimension))`,
      [],
    );
    await this.exec(em, `CREATE TABLE IF NOT EXISTS ${PAGES} (generation text NOT NULL, page integer NOT NULL, ids text NOT NULL, codes blob NOT NULL, scales blob NOT NULL, errors blob NOT NULL, PRIMARY KEY (generation, page))`, []);
    await this.exec(em, `CREATE TABLE IF NOT EXISTS ${MIRROR_STATE} (id integer PRIMARY KEY CHECK (id = 1), position integer NOT NULL)`, []);
  }

  /**
   * Creates the change log of the in-memory indexes and its triggers when missing:
   * `tool_vdb_changes (seq, record_id)`, one row per insert, delete, or update of a record's
   * embedding, collection, dimension or id, whoever writes it (this process, another process on
   * the same file, a bulk load). Rows are added in the writing transaction, so they exist exactly
   * when the write committed; the triggers keep the last ${KEEP_CHANGES.toLocaleString('en')} rows.
   */
  async ensureChangeLog(em: EntityManager): Promise<void> {
    const [exists] = (await this.exec(em, `SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = '${CHANGES}'`, [])) as unknown[];
    const triggers = (await this.exec(em, `SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = '${t.table}' AND name GLOB '${CHANGES}_*'`, [])) as Array<{ name: string }>;
    if (exists && triggers.length === 3) return;
    const log = (id: string) => `INSERT INTO ${CHANGES} (record_id) VALUES (${id})`;
    const prune = `DELETE FROM ${CHANGES} WHERE seq <= (SELECT max(seq) FROM ${CHANGES}) - ${KEEP_CHANGES}`;
    // Each statement is idempotent (a start interrupted half-way completes at the next), so no transaction.
    await this.exec(em, `CREATE TABLE IF NOT EXISTS ${CHANGES} (seq integer PRIMARY KEY AUTOINCREMENT, record_id text NOT NULL)`, []);
    await this.exec(em, `CREATE TRIGGER IF NOT EXISTS ${CHANGES}_insert AFTER INSERT ON ${t.table} BEGIN ${log(`NEW.${t.id}`)}; ${prune}; END`, []);
    await this.exec(
      em,
      `CREATE TRIGGER IF NOT EXISTS ${CHANGES}_update AFTER UPDATE OF ${t.embedding}, ${t.collection}, ${t.dimension}, ${t.id} ON ${t.table} BEGIN ${log(`OLD.${t.id}`)}; INSERT INTO ${CHANGES} (record_id) SELECT NEW.${t.id} WHERE NEW.${t.id} <> OLD.${t.id}; ${prune}; END`,
      [],
    );
    await this.exec(em, `CREATE TRIGGER IF NOT EXISTS ${CHANGES}_delete AFTER DELETE ON ${t.table} BEGIN ${log(`OLD.${t.id}`)}; ${prune}; END`, []);
    // Writes may have gone unlogged while a trigger was missing: start the indexes afresh, and
    // forget the saved ones (the log no longer tells what changed since they were taken).
    this.dropIndexes();
    await this.ensureSnapshotTables(em);
    await this.exec(em, `DELETE FROM ${SNAPSHOTS}`, []);
    await this.exec(em, `DELETE FROM ${PAGES}`, []);
    // And the mirrors: the next sync checks every record.
    await this.exec(em, `DELETE FROM ${MIRROR_STATE}`, []);
  }

  /**
   * Creates the term index and its triggers when missing, and fills it from the records then
   * (in one transaction). Terms: `t:<tag>` (string tags), `m:<key>=<value>` (string values of
   * top-level metadata keys), `a:<key>=<value>` (strings in top-level metadata arrays).
   */
  async ensureTermIndex(em: EntityManager): Promise<void> {
    const [exists] = (await this.exec(em, `SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = '${TERMS}'`, [])) as unknown[];
    const triggers = (await this.exec(em, `SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = '${t.table}' AND name GLOB '${TERMS}_*'`, [])) as Array<{ name: string }>;
    if (exists && triggers.length === 3) return;
    // inTransaction, not em.transactional: no AsyncLocalStorage (see @trellis/core's inTransaction).
    await inTransaction(em, async (tx) => {
      await this.exec(tx, `CREATE TABLE IF NOT EXISTS ${TERMS} (collection_id text NOT NULL, term text NOT NULL, record_id text NOT NULL, PRIMARY KEY (collection_id, term, record_id)) WITHOUT ROWID`, []);
      await this.exec(tx, `CREATE INDEX IF NOT EXISTS ${TERMS}_record_id_index ON ${TERMS} (record_id)`, []);
      const insert = `INSERT OR IGNORE INTO ${TERMS} (collection_id, term, record_id) ${termRows('NEW')}`;
      const remove = `DELETE FROM ${TERMS} WHERE record_id = OLD.${t.id}`;
      await this.exec(tx, `CREATE TRIGGER IF NOT EXISTS ${TERMS}_insert AFTER INSERT ON ${t.table} BEGIN ${insert}; END`, []);
      await this.exec(tx, `CREATE TRIGGER IF NOT EXISTS ${TERMS}_update AFTER UPDATE OF ${t.tags}, ${t.metadata}, ${t.collection}, ${t.id} ON ${t.table} BEGIN ${remove}; ${insert}; END`, []);
      await this.exec(tx, `CREATE TRIGGER IF NOT EXISTS ${TERMS}_delete AFTER DELETE ON ${t.table} BEGIN ${remove}; END`, []);
      // Rebuilt whole: records written while the triggers were missing are indexed too.
      await this.exec(tx, `DELETE FROM ${TERMS}`, []);
      await this.exec(tx, `INSERT OR IGNORE INTO ${TERMS} (collection_id, term, record_id) ${termRows('r', t.table)}`, []);
    });
  }

  private async ensureTable(em: EntityManager, dimension: number): Promise<string> {
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > 8192) throw new Error(`SqliteVecVectorStore: unsupported dimension ${dimension}`);
    const table = mirrorTable(dimension);
    if (!this.tables.has(table)) {
      await this.exec(em, `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING vec0(record_id text primary key, collection_id text partition key, embedding float[${dimension}] distance_metric=l2)`, []);
      this.tables.add(table);
    }
    return table;
  }

  private async mirrorTables(em: EntityManager): Promise<string[]> {
    const rows = (await this.exec(em, "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'tool_vdb_unit_[0-9]*' AND sql LIKE '%USING vec0%'", [])) as Array<{ name: string }>;
    return rows.map((row) => row.name);
  }

  private exec(em: EntityManager, sql: string, params: unknown[]): Promise<unknown> {
    return em.getConnection().execute(sql, params, 'all', em.getTransactionContext());
  }

  /** sqlite-vec's version, which also proves the extension is loaded. */
  async version(em: EntityManager): Promise<string> {
    const [row] = (await em.getConnection().execute('SELECT vec_version() AS version', [], 'all')) as Array<{ version: string }>;
    return row!.version;
  }

  /**
   * Keeps the `vec0` mirror in step with the records, in the record's own transaction (same
   * connection), so both commit or neither does.
   */
  async upsert(em: EntityManager, entries: readonly VectorEntry[]): Promise<void> {
    // Per dimension, per chunk: find which ids the mirror already holds (one statement), delete
    // those, then add every vector in multi-row statements (a batch of new records costs a few
    // statements, not three per record).
    const byDimension = new Map<number, VectorEntry[]>();
    for (const entry of entries) {
      const group = byDimension.get(entry.vector.length);
      if (group) group.push(entry);
      else byDimension.set(entry.vector.length, [entry]);
    }
    for (const [dimension, group] of byDimension) {
      const table = await this.ensureTable(em, dimension);
      for (let start = 0; start < group.length; start += WRITE_CHUNK) {
        // The last entry of an id wins, as it would writing them one by one.
        const chunk = [...new Map(group.slice(start, start + WRITE_CHUNK).map((entry) => [entry.id, entry])).values()];
        const ids = chunk.map((entry) => entry.id);
        const marks = ids.map(() => '?').join(', ');
        const lookup = await this.mirrorIds(em, table);
        const held = (await this.exec(em, `SELECT ${lookup.column} AS id FROM ${lookup.table} WHERE ${lookup.column} IN (${marks})`, ids)) as Array<{ id: string }>;
        for (const { id } of held) await this.exec(em, `DELETE FROM ${table} WHERE record_id = ?`, [id]);
        await this.exec(em, `DELETE FROM ${ZERO} WHERE record_id IN (${marks})`, ids);
        const units: unknown[] = [];
        const zeros: unknown[] = [];
        for (const entry of chunk) {
          const unit = toUnit(entry.vector);
          if (unit) units.push(entry.id, entry.collectionId, vectorToBytes(unit));
          else zeros.push(entry.id, entry.collectionId, dimension);
        }
        const rows = (values: unknown[]) => Array.from({ length: values.length / 3 }, () => '(?, ?, ?)').join(', ');
        if (units.length) await this.exec(em, `INSERT INTO ${table} (record_id, collection_id, embedding) VALUES ${rows(units)}`, units);
        if (zeros.length) await this.exec(em, `INSERT INTO ${ZERO} (record_id, collection_id, dimension) VALUES ${rows(zeros)}`, zeros);
      }
    }
  }

  /**
   * Where the ids of a `vec0` mirror are looked up by the hundred: its `<table>_rowids` shadow
   * table (sqlite-vec's id → row map, `id TEXT UNIQUE`: an index lookup each) when it has that
   * shape, else the virtual table itself (a correct but slower lookup per id).
   */
  private async mirrorIds(em: EntityManager, table: string): Promise<{ table: string; column: string }> {
    let shadow = this.shadows.get(table);
    if (shadow === undefined) {
      const [row] = (await this.exec(em, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, [`${table}_rowids`])) as Array<{ sql: string }>;
      shadow = row && /\bid\s+TEXT\s+UNIQUE\b/i.test(row.sql) ? `${table}_rowids` : null;
      this.shadows.set(table, shadow);
    }
    return shadow ? { table: shadow, column: 'id' } : { table, column: 'record_id' };
  }

  async remove(em: EntityManager, _collectionId: string, ids: readonly string[]): Promise<void> {
    const tables = await this.mirrorTables(em);
    for (let start = 0; start < ids.length; start += WRITE_CHUNK) {
      const chunk = ids.slice(start, start + WRITE_CHUNK);
      const marks = chunk.map(() => '?').join(', ');
      for (const table of tables) {
        const lookup = await this.mirrorIds(em, table);
        const held = (await this.exec(em, `SELECT ${lookup.column} AS id FROM ${lookup.table} WHERE ${lookup.column} IN (${marks})`, chunk)) as Array<{ id: string }>;
        for (const { id } of held) await this.exec(em, `DELETE FROM ${table} WHERE record_id = ?`, [id]);
      }
      await this.exec(em, `DELETE FROM ${ZERO} WHERE record_id IN (${marks})`, chunk);
    }
  }

  async search(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]> {
    try {
      const unit = request.filter ? null : toUnit(request.vector);
      // The in-memory index reflects committed rows: inside a transaction (which may have written
      // some) the search reads the tables instead.
      if (unit && this.memoryIndex && !em.getTransactionContext()) {
        const hits = await this.searchMemory(em, request);
        if (hits) return hits;
      }
      if (unit) {
        const table = mirrorTable(request.vector.length);
        if ((await this.mirrorTables(em)).includes(table)) {
          // Unfiltered: sqlite-vec's own brute-force k-NN over the collection's partition (unit
          // vectors, L2), then the zero vectors (cosine distance 1), merged by distance and id.
          const rows = (await this.exec(em, `SELECT record_id AS id, distance FROM ${table} WHERE embedding MATCH ? AND k = ? AND collection_id = ? ORDER BY distance`, [
            vectorToBytes(unit),
            request.limit,
            request.collectionId,
          ])) as Array<{ id: string; distance: number }>;
          const zeros = (await this.exec(em, `SELECT record_id AS id FROM ${ZERO} WHERE collection_id = ? AND dimension = ? ORDER BY record_id LIMIT ?`, [
            request.collectionId,
            request.vector.length,
            request.limit,
          ])) as Array<{ id: string }>;
          const hits = [...rows.map((row) => ({ id: row.id, distance: (Number(row.distance) * Number(row.distance)) / 2 })), ...zeros.map((row) => ({ id: row.id, distance: 1 }))];
          return hits.sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, request.limit);
        }
      }
      return await this.query(em, request);
    } catch (error) {
      // A new connection (after the pool replaced a broken one) lacks the extension: load it again once.
      if (!(error instanceof Error) || !/no such function: vec_/.test(error.message) || !this.orm) throw error;
      await this.load();
      return this.query(em, request);
    }
  }

  /**
   * Unfiltered search through the collection's in-memory index, in one statement in the common
   * case, without waiting for a catch-up. The index reflects every record as of the log position
   * `position` (`applied`), except records the log names after it. The statement reads, in one
   * snapshot, the rows of the index's candidates for `limit + pad` and of every record the log
   * names after `position`, with the log's bounds and the number of those records (`changed`).
   * When `changed <= pad` the answer is exact for that snapshot: a record unchanged since
   * `position` and among the `limit` nearest now has fewer than `limit + changed` records of the
   * index ahead of it, so it is a candidate for `limit + pad`; the changed records are ranked from
   * their rows as they are now. Otherwise the statement runs again with `pad = changed` (a write
   * committed meanwhile). Before, a search whose log had moved waited in the gate for a catch-up
   * (queued behind every other search's, each a few statements on the one connection) and ran
   * again, up to four times, then fell back to the `vec0` scan: under a steady write load, most
   * searches did all of that. The index is caught up in the background instead (`catchUpSoon`).
   * Null: no index for this collection (over the memory budget, or being built in the
   * background), or the log no longer reaches back to `position` (the catch-up rebuilds).
   */
  private async searchMemory(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[] | null> {
    const key = `${request.collectionId}/${request.vector.length}`;
    if (this.applied < 0 || !this.indexes.has(key)) {
      const loaded = await this.exclusive(async () => {
        await this.catchUp(em);
        return this.indexOf(em, request.collectionId, request.vector.length, this.applied);
      });
      if (!loaded) return null;
    }
    let pad = this.recentChanges;
    for (let attempt = 0; attempt < 4; attempt++) {
      // Read together (no await between): the index as it stands reflects every record the log
      // does not name after `position` (a catch-up moves `applied` only once it applied all).
      const position = this.applied;
      const loaded = position >= 0 ? this.indexes.get(key) : undefined;
      if (!loaded) return null;
      loaded.used = ++this.clock;
      const candidates = loaded.index.candidates(request.vector, request.limit + pad);
      const rows = (await this.exec(
        em,
        `SELECT ${t.id} AS id, ${t.embedding} AS embedding, NULL AS hi, NULL AS lo, NULL AS changed FROM ${t.table} ` +
          `WHERE ${t.id} IN (SELECT value FROM json_each(?) UNION SELECT record_id FROM ${CHANGES} WHERE seq > ?) AND +${t.collection} = ? AND +${t.dimension} = ? ` +
          `UNION ALL SELECT NULL, NULL, (SELECT max(seq) FROM ${CHANGES}), (SELECT min(seq) FROM ${CHANGES}), (SELECT count(DISTINCT record_id) FROM ${CHANGES} WHERE seq > ?)`,
        [JSON.stringify(candidates), position, request.collectionId, request.vector.length, position],
      )) as Array<{ id: string | null; embedding: Uint8Array | null; hi: number | null; lo: number | null; changed: number | null }>;
      const head = rows.find((row) => row.id === null)!;
      const hi = Number(head.hi ?? 0);
      const changed = Number(head.changed ?? 0);
      // The log was cut short past `position` (or rewound): the records changed since are unknown.
      if (hi < position || (hi > position && (head.lo === null || Number(head.lo) > position + 1))) break;
      this.recentChanges = Math.min(changed, MAX_PAD);
      if (hi > position) this.catchUpSoon();
      if (changed > pad) {
        if (changed > MAX_PAD) break;
        pad = changed;
        continue;
      }
      const top = new TopK(request.limit);
      for (const row of rows) if (row.id !== null && row.embedding) top.offer(row.id, cosineDistance(request.vector, bytesToVector(row.embedding)));
      return top.items;
    }
    // Far behind, or writes kept landing: catch up first (in the gate), then answer.
    const position = await this.exclusive(() => this.catchUp(em));
    if (!this.indexes.has(key) || this.applied !== position) return null;
    return this.searchMemoryAt(em, request, key, position);
  }

  /** A catch-up in the gate soon, unless one is already due (not awaited: searches do not wait for it). */
  private catchUpSoon(): void {
    if (this.catchingUp || !this.orm) return;
    const em = this.orm.em.fork();
    this.catchingUp = this.exclusive(() => this.catchUp(em))
      .catch(() => undefined)
      .finally(() => {
        this.catchingUp = undefined;
      });
  }

  /** The re-ranking of the candidates at a position the caller just caught up to; null if the log moved meanwhile. */
  private async searchMemoryAt(em: EntityManager, request: VectorSearchRequest, key: string, position: number): Promise<VectorHit[] | null> {
    const loaded = this.indexes.get(key);
    if (!loaded) return null;
    const candidates = loaded.index.candidates(request.vector, request.limit);
    const rows = (await this.exec(
      em,
      `SELECT ${t.id} AS id, ${t.embedding} AS embedding, (SELECT max(seq) FROM ${CHANGES}) AS hi FROM ${t.table} WHERE ${t.id} IN (SELECT value FROM json_each(?)) AND +${t.collection} = ? AND +${t.dimension} = ?`,
      [JSON.stringify(candidates), request.collectionId, request.vector.length],
    )) as Array<{ id: string; embedding: Uint8Array; hi: number | null }>;
    if (rows.length !== candidates.length || rows.some((row) => Number(row.hi ?? 0) !== position)) return null;
    if (candidates.length === 0 && (await this.logPosition(em)).hi !== position) return null;
    const top = new TopK(request.limit);
    for (const row of rows) top.offer(row.id, cosineDistance(request.vector, bytesToVector(row.embedding)));
    return top.items;
  }

  private async logPosition(em: EntityManager): Promise<{ lo: number | null; hi: number }> {
    const [row] = (await this.exec(em, `SELECT min(seq) AS lo, max(seq) AS hi FROM ${CHANGES}`, [])) as Array<{ lo: number | null; hi: number | null }>;
    return { lo: row?.lo == null ? null : Number(row.lo), hi: row?.hi == null ? 0 : Number(row.hi) };
  }

  /** Runs `run` after every catch-up and index installation queued before it (they read the log position and write the indexes). */
  private exclusive<T>(run: () => Promise<T>): Promise<T> {
    const next = this.gate.then(run);
    this.gate = next.catch(() => undefined);
    return next;
  }

  /**
   * Applies the change log since the indexes' position to them (re-reading each changed record's
   * current row: idempotent, so a row read newer than the position is simply read again later),
   * and answers the new position. Drops them all when the log was cut short or rewound.
   */
  private async catchUp(em: EntityManager): Promise<number> {
    // A store searching a database it did not start on (bench, tools) creates the log first.
    if (this.applied < 0) await this.ensureChangeLog(em);
    const { lo, hi } = await this.logPosition(em);
    if (hi === this.applied) return hi;
    if (this.applied < 0 || this.indexes.size === 0 || hi < this.applied || lo === null || lo > this.applied + 1) {
      // A build under way checks the log back to its own start when it installs; only a rewound log voids it here.
      this.dropIndexes(hi < this.applied);
      this.applied = hi;
      return hi;
    }
    await this.applyChanges(em, this.applied, hi, [...this.indexes.values()]);
    this.applied = hi;
    // A saved index is useful after a restart only while the log still reaches back to it.
    for (const [key, loaded] of this.indexes) if (loaded.attempted === undefined || hi - loaded.attempted > RESAVE_LAG) this.scheduleSave(em, key, loaded);
    return hi;
  }

  /** Re-reads the records changed at log positions in (`from`, `to`] into `targets`. */
  private async applyChanges(em: EntityManager, from: number, to: number, targets: readonly LoadedIndex[]): Promise<void> {
    const changed = (await this.exec(em, `SELECT DISTINCT record_id AS id FROM ${CHANGES} WHERE seq > ? AND seq <= ?`, [from, to])) as Array<{ id: string }>;
    for (let start = 0; start < changed.length; start += CHUNK) {
      const ids = changed.slice(start, start + CHUNK).map((row) => row.id);
      const rows = (await this.exec(
        em,
        `SELECT ${t.id} AS id, ${t.collection} AS collection, ${t.dimension} AS dimension, ${t.embedding} AS embedding FROM ${t.table} WHERE ${t.id} IN (${ids.map(() => '?').join(', ')})`,
        ids,
      )) as Array<{ id: string; collection: string; dimension: number; embedding: Uint8Array | null }>;
      const byId = new Map(rows.map((row) => [row.id, row]));
      for (const id of ids) {
        const row = byId.get(id);
        const vector = row?.embedding ? bytesToVector(row.embedding) : null;
        for (const loaded of targets) {
          if (row && vector && row.collection === loaded.collectionId && Number(row.dimension) === loaded.dimension && vector.length === loaded.dimension) {
            loaded.index.set(id, vector);
            loaded.changed = true;
          } else if (loaded.index.delete(id)) loaded.changed = true;
        }
      }
    }
  }

  /**
   * The collection's index. When missing: null when it would exceed the budget; built from its
   * rows here for a small collection; for one of `backgroundBuildRows` vectors or more, a build
   * is started in the background (outside the gate, so searches keep running) and null is
   * answered until it is installed.
   */
  private async indexOf(em: EntityManager, collectionId: string, dimension: number, position: number): Promise<LoadedIndex | null> {
    const key = `${collectionId}/${dimension}`;
    const existing = this.indexes.get(key);
    if (existing) {
      existing.used = ++this.clock;
      return existing;
    }
    if (this.building.has(key)) return null;
    if (this.declined.get(key) === position) return null;
    if (this.persistIndex) {
      const restored = await this.restore(em, key, collectionId, dimension, position);
      if (restored) return restored;
    }
    // The collection's records, of any dimension (an index-only count; its records share one
    // dimension but for rare exceptions): an upper bound of the vectors to index.
    const [counted] = (await this.exec(em, `SELECT count(*) AS n FROM ${t.table} WHERE ${t.collection} = ?`, [collectionId])) as Array<{ n: number }>;
    const count = Number(counted?.n ?? 0);
    if (QuantizedIndex.estimateBytes(dimension, count) > this.memoryIndexBytes) {
      this.declined.set(key, position);
      return null;
    }
    this.declined.delete(key);
    if (count < this.backgroundBuildRows) {
      // The rows read are at least as new as `position` (no catch-up runs meanwhile: `exclusive`);
      // whatever committed after it is in the log and applied again by the next catch-up.
      const index = await this.readIndex(em, collectionId, dimension, count, () => true);
      return this.install(key, { index: index!, collectionId, dimension, used: ++this.clock });
    }
    const build = this.buildInBackground(em, key, collectionId, dimension, count, position).finally(() => this.building.delete(key));
    this.building.set(key, build);
    return null;
  }

  /**
   * Reads the collection's vectors into a new index, a page at a time (other work runs between
   * pages). Null when `going` turns false between pages.
   */
  private async readIndex(em: EntityManager, collectionId: string, dimension: number, count: number, going: () => boolean, background = false): Promise<QuantizedIndex | null> {
    const index = new QuantizedIndex(dimension, { simd: this.simd, capacity: count });
    // In the background: small pages, and the event loop's other work (searches) first between
    // them, since the SQLite driver reads on this thread.
    const page = background ? BACKGROUND_PAGE : PAGE;
    let after = '';
    for (;;) {
      if (background) await new Promise((resolve) => setImmediate(resolve));
      if (!going()) return null;
      const rows = (await this.exec(
        em,
        `SELECT ${t.id} AS id, ${t.embedding} AS embedding FROM ${t.table} WHERE ${t.collection} = ? AND ${t.dimension} = ? AND ${t.id} > ? ORDER BY ${t.id} LIMIT ${page}`,
        [collectionId, dimension, after],
      )) as Array<{ id: string; embedding: Uint8Array | null }>;
      for (const row of rows) {
        const vector = row.embedding ? bytesToVector(row.embedding) : null;
        if (vector && vector.length === dimension) index.set(row.id, vector);
      }
      if (rows.length < page) return index;
      after = rows[rows.length - 1]!.id;
    }
  }

  /**
   * Builds an index from rows read after log position `since` (each page in its own snapshot, at
   * least that new), then, in the gate, brings it to the indexes' position by re-reading every
   * record the log names after `since`, and installs it. Given up (the next search starts
   * another) when the log no longer reaches back to `since`, or the store was closed or its
   * indexes dropped meanwhile; a failure is not thrown (the searches keep their fallback).
   */
  private async buildInBackground(em: EntityManager, key: string, collectionId: string, dimension: number, count: number, since: number): Promise<void> {
    const generation = this.generation;
    const going = () => generation === this.generation;
    try {
      const index = await this.readIndex(em, collectionId, dimension, count, going, true);
      if (!index) return;
      await this.exclusive(async () => {
        if (!going()) return;
        const position = await this.catchUp(em);
        if (!going()) return;
        const { lo } = await this.logPosition(em);
        if (position < since || (position > since && (lo === null || lo > since + 1))) return;
        const loaded: LoadedIndex = { index, collectionId, dimension, used: ++this.clock };
        if (position > since) await this.applyChanges(em, since, position, [loaded]);
        this.install(key, loaded);
        this.scheduleSave(em, key, loaded);
      });
    } catch {
      // The searches answer from the vec0 mirror meanwhile; the next one that misses the index starts a new build.
    }
  }

  /**
   * The collection's saved index, when there is one the change log still reaches back to (or is
   * at): its pages loaded into a new index, the records the log names since applied, and its size
   * checked against the collection's; installed. Null (the caller builds the index) otherwise, or
   * when anything about it is off (a page missing or malformed, a size that does not match).
   */
  private async restore(em: EntityManager, key: string, collectionId: string, dimension: number, position: number): Promise<LoadedIndex | null> {
    try {
      const [header] = (await this.exec(em, `SELECT generation, position, count, pages, format FROM ${SNAPSHOTS} WHERE collection_id = ? AND dimension = ?`, [collectionId, dimension])) as Array<{
        generation: string;
        position: number;
        count: number;
        pages: number;
        format: number;
      }>;
      if (!header || Number(header.format) !== SNAPSHOT_FORMAT) return null;
      const since = Number(header.position);
      const count = Number(header.count);
      if (since > position || QuantizedIndex.estimateBytes(dimension, count) > this.memoryIndexBytes) return null;
      if (since < position) {
        const { lo } = await this.logPosition(em);
        if (lo === null || lo > since + 1) return null;
      }
      const index = new QuantizedIndex(dimension, { simd: this.simd, capacity: count });
      // A page at a time, other work (requests) served between them.
      for (let page = 0; page < Number(header.pages); page++) {
        if (page > 0) await new Promise((resolve) => setImmediate(resolve));
        const [row] = (await this.exec(em, `SELECT ids, codes, scales, errors FROM ${PAGES} WHERE generation = ? AND page = ?`, [header.generation, page])) as Array<{
          ids: string;
          codes: Uint8Array;
          scales: Uint8Array;
          errors: Uint8Array;
        }>;
        // Gone: another process saved a newer snapshot meanwhile.
        if (!row) return null;
        index.append({ ids: JSON.parse(row.ids) as string[], codes: row.codes, scales: float64s(row.scales), errors: float64s(row.errors) });
      }
      if (index.size !== count) return null;
      const loaded: LoadedIndex = { index, collectionId, dimension, used: ++this.clock, saved: { position: since, generation: header.generation }, changed: false, attempted: since };
      if (since < position) await this.applyChanges(em, since, position, [loaded]);
      // A last check: as many vectors as the collection has records of this dimension.
      const [records] = (await this.exec(em, `SELECT count(*) AS n FROM ${t.table} WHERE ${t.collection} = ?`, [collectionId])) as Array<{ n: number }>;
      if (Number(records?.n) !== index.size) {
        const [exact] = (await this.exec(em, `SELECT count(*) AS n FROM ${t.table} WHERE ${t.collection} = ? AND ${t.dimension} = ?`, [collectionId, dimension])) as Array<{ n: number }>;
        if (Number(exact?.n) !== index.size) return null;
      }
      return this.install(key, loaded);
    } catch {
      return null;
    }
  }

  /** Saves the index in the background, unless it is small (quick to build) or a save of it is under way. */
  private scheduleSave(em: EntityManager, key: string, loaded: LoadedIndex): void {
    if (!this.persistIndex || loaded.index.size < this.backgroundBuildRows || this.saving.has(key)) return;
    const save = this.save(em, key, loaded)
      .catch(() => {
        // Not saved: a restart builds the index instead; a catch-up further on tries again.
        loaded.changed = true;
      })
      .finally(() => this.saving.delete(key));
    this.saving.set(key, save);
  }

  /**
   * Writes a copy of the index, taken in the gate (so at the indexes' log position), as a new
   * generation of pages (other work runs between them), then in one transaction points the
   * collection's snapshot row at it and deletes the previous generation's pages, unless another
   * process saved a newer one meanwhile. An index unchanged since its last save only moves that
   * snapshot's position.
   */
  private async save(em: EntityManager, key: string, loaded: LoadedIndex): Promise<void> {
    const epoch = this.generation;
    const going = () => epoch === this.generation && this.indexes.get(key) === loaded;
    const copy = await this.exclusive(async () => {
      if (!going()) return null;
      const position = this.applied;
      loaded.attempted = position;
      if (loaded.saved && !loaded.changed) return { position, pages: null, previous: loaded.saved.generation };
      loaded.changed = false;
      loaded.saved = undefined;
      const pages: IndexPage[] = [];
      for (let from = 0; from < loaded.index.size; from += SNAPSHOT_PAGE) pages.push(loaded.index.export(from, SNAPSHOT_PAGE));
      return { position, pages, previous: null };
    });
    if (!copy) return;
    const where = 'collection_id = ? AND dimension = ?';
    const at = [loaded.collectionId, loaded.dimension];
    if (!copy.pages) {
      // Unchanged since: the saved pages are the index at this position too.
      await this.exec(em, `UPDATE ${SNAPSHOTS} SET position = ? WHERE ${where} AND generation = ? AND position < ?`, [copy.position, ...at, copy.previous, copy.position]);
      if (loaded.saved && !loaded.changed) loaded.saved = { position: copy.position, generation: copy.previous! };
      return;
    }
    const generation = randomUUID();
    let written = 0;
    try {
      for (const [page, data] of copy.pages.entries()) {
        await new Promise((resolve) => setImmediate(resolve));
        if (!going()) throw new Error('index dropped');
        await this.exec(em, `INSERT INTO ${PAGES} (generation, page, ids, codes, scales, errors) VALUES (?, ?, ?, ?, ?, ?)`, [
          generation,
          page,
          JSON.stringify(data.ids),
          // A Buffer: the driver binds only those as blobs.
          Buffer.from(data.codes.buffer, data.codes.byteOffset, data.codes.byteLength),
          bytesOf(data.scales),
          bytesOf(data.errors),
        ]);
        written++;
      }
      const count = copy.pages.reduce((sum, page) => sum + page.ids.length, 0);
      const installed = await inTransaction(em, async (tx) => {
        const [current] = (await this.exec(tx, `SELECT generation, position FROM ${SNAPSHOTS} WHERE ${where}`, at)) as Array<{ generation: string; position: number }>;
        if (current && Number(current.position) > copy.position) return false;
        await this.exec(
          tx,
          `INSERT INTO ${SNAPSHOTS} (collection_id, dimension, generation, position, count, pages, format) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (collection_id, dimension) DO UPDATE SET generation = excluded.generation, position = excluded.position, count = excluded.count, pages = excluded.pages, format = excluded.format`,
          [...at, generation, copy.position, count, copy.pages.length, SNAPSHOT_FORMAT],
        );
        if (current) await this.exec(tx, `DELETE FROM ${PAGES} WHERE generation = ?`, [current.generation]);
        return true;
      });
      if (!installed) throw new Error('a newer snapshot exists');
      if (!loaded.changed) loaded.saved = { position: copy.position, generation };
    } catch (error) {
      if (written > 0) await this.exec(em, `DELETE FROM ${PAGES} WHERE generation = ?`, [generation]).catch(() => undefined);
      throw error;
    }
  }

  /** Adds an index, dropping the least recently searched others until it fits the budget. */
  private install(key: string, loaded: LoadedIndex): LoadedIndex {
    const byAge = [...this.indexes.entries()].sort((a, b) => a[1].used - b[1].used);
    let held = byAge.reduce((sum, [, other]) => sum + other.index.bytes, 0);
    for (const [other, old] of byAge) {
      if (held + loaded.index.bytes <= this.memoryIndexBytes) break;
      this.indexes.delete(other);
      held -= old.index.bytes;
    }
    this.indexes.set(key, loaded);
    return loaded;
  }

  /**
   * Resolves once no background build is under way (builds started meanwhile included). For
   * tests, benchmarks, and warming a collection: search it once, then wait.
   */
  async idle(): Promise<void> {
    await this.preloading;
    while (this.building.size > 0 || this.saving.size > 0 || this.catchingUp) await Promise.allSettled([...this.building.values(), ...this.saving.values(), this.catchingUp]);
  }

  /** Drops the indexes; `builds`: the background builds under way too (their rows may be missing unlogged writes). */
  private dropIndexes(builds = true): void {
    if (builds) this.generation++;
    this.indexes.clear();
    this.declined.clear();
  }

  async close(): Promise<void> {
    this.dropIndexes();
    // Builds stop at their next page and install nothing.
    await this.idle();
    this.applied = -1;
  }

  private async query(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]> {
    const params: unknown[] = [vectorToBytes(request.vector), request.collectionId, request.vector.length];
    let where = `r.${t.collection} = ? AND r.${t.dimension} = ?`;
    const candidates = request.filter && this.termIndex ? candidatesOf(request.filter) : null;
    if (candidates) {
      // Candidates first: the rows the term index names (a superset of the matches), by primary key.
      const sub = candidateSql(candidates, request.collectionId);
      where = `r.${t.id} IN (${sub.sql}) AND +r.${t.collection} = ? AND r.${t.dimension} = ?`;
      params.splice(1, 0, ...sub.params);
    }
    if (request.filter) {
      const fragment = compileVdbFilter(request.filter, 'sqlite', { columns: { tags: `r.${t.tags}`, metadata: `r.${t.metadata}` } });
      where += ` AND ${fragment.sql}`;
      params.push(...fragment.params);
    }
    params.push(request.limit);
    const rows = (await em
      .getConnection()
      .execute(
        `SELECT r.${t.id} AS id, COALESCE(vec_distance_cosine(r.${t.embedding}, ?), 1.0) AS distance FROM ${t.table} r WHERE ${where} ORDER BY distance, r.${t.id} LIMIT ?`,
        params,
        'all',
        em.getTransactionContext(),
      )) as Array<{ id: string; distance: number }>;
    return rows.map((row) => ({ id: row.id, distance: Number(row.distance) }));
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      const client = (this.orm!.em.getConnection() as unknown as { getKnex(): { client: KnexClient } }).getKnex().client;
      const connection = await client.acquireConnection();
      try {
        if (typeof connection.pragma === 'function') connection.loadExtension(this.extensionPath);
        else await new Promise<void>((resolve, reject) => connection.loadExtension(this.extensionPath, (error) => (error ? reject(error) : resolve())));
      } finally {
        await client.releaseConnection(connection);
      }
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }
}

/** The term index of filtered searches. */
const TERMS = 'tool_vdb_terms';

/** The change log the in-memory indexes follow, and how many of its rows the triggers keep. */
const CHANGES = 'tool_vdb_changes';
const KEEP_CHANGES = 10000;
/** At most this many records changed since the indexes' position are ranked from their rows by a search; past it, it waits for a catch-up. */
const MAX_PAD = 1000;
/** Ids per `IN (...)` statement, and rows per page when an index is built. */
const CHUNK = 500;
const PAGE = 5000;
const BACKGROUND_PAGE = 500;
/** The saved in-memory indexes (a row per collection and dimension) and their pages of codes. */
const SNAPSHOTS = 'tool_vdb_index_snapshots';
const PAGES = 'tool_vdb_index_pages';
/** The change-log position up to which the mirrors were last checked against the records (one row). */
const MIRROR_STATE = 'tool_vdb_mirror_state';
/** How the pages code an index (bumped if `QuantizedIndex`'s coding ever changes: older snapshots are then ignored). */
const SNAPSHOT_FORMAT = 1;
/** Vectors per page of a snapshot. */
const SNAPSHOT_PAGE = 8192;
/** Log positions a saved index may fall behind before it is saved again (the log keeps 10,000). */
const RESAVE_LAG = 5000;
/** Records per multi-row write of the mirrors (3 parameters each). */
const WRITE_CHUNK = 500;

/**
 * The term rows (collection_id, term, record_id) of a records row: `NEW` in a trigger, or every
 * row of the records table (`r`) when `table` is given.
 */
const termRows = (row: string, table = ''): string => {
  const from = table ? `${table} AS ${row}, ` : '';
  const head = (term: string) => `SELECT ${row}.${t.collection}, ${term}, ${row}.${t.id} FROM ${from}`;
  return [
    `${head(`'t:' || e.value`)}json_each(${row}.${t.tags}) AS e WHERE e.type = 'text'`,
    `${head(`'m:' || e.key || '=' || e.value`)}json_each(${row}.${t.metadata}) AS e WHERE e.type = 'text'`,
    `${head(`'a:' || m.key || '=' || e.value`)}json_each(${row}.${t.metadata}) AS m, json_each(m.value) AS e WHERE m.type = 'array' AND e.type = 'text'`,
  ].join(' UNION ALL ');
};

/** Terms any matching record must have: a set (any of), or the intersection / union of such sets. */
type Candidates = { kind: 'any'; terms: Set<string> } | { kind: 'and' | 'or'; parts: Candidates[] };

/**
 * A necessary condition of `filter` over the term index, or null when the filter has none (then
 * the search scans the collection). Every record that matches the filter has the terms named, so
 * restricting to them loses nothing: the full filter is applied to the candidates afterwards.
 */
export function candidatesOf(filter: VdbFilter): Candidates | null {
  switch (filter.op) {
    case 'contains': {
      if (typeof filter.value !== 'string') return null;
      if (filter.field.root === 'tags') return { kind: 'any', terms: new Set([`t:${filter.value}`]) };
      return filter.field.path.length === 1 ? { kind: 'any', terms: new Set([`a:${filter.field.path[0]}=${filter.value}`]) } : null;
    }
    case 'compare':
      if (filter.comparison !== 'eq' || typeof filter.value !== 'string' || filter.field.root !== 'metadata' || filter.field.path.length !== 1) return null;
      return { kind: 'any', terms: new Set([`m:${filter.field.path[0]}=${filter.value}`]) };
    case 'and': {
      const parts = filter.items.map(candidatesOf).filter((part): part is Candidates => part !== null);
      if (parts.length === 0) return null;
      return parts.length === 1 ? parts[0]! : { kind: 'and', parts };
    }
    case 'or': {
      const parts = filter.items.map(candidatesOf);
      if (parts.some((part) => part === null)) return null;
      if (parts.every((part) => part!.kind === 'any')) return { kind: 'any', terms: new Set(parts.flatMap((part) => [...(part as { terms: Set<string> }).terms])) };
      return { kind: 'or', parts: parts as Candidates[] };
    }
    default:
      return null;
  }
}

function candidateSql(candidates: Candidates, collectionId: string): { sql: string; params: unknown[] } {
  if (candidates.kind === 'any') {
    const terms = [...candidates.terms];
    return { sql: `SELECT record_id FROM ${TERMS} WHERE collection_id = ? AND term IN (${terms.map(() => '?').join(', ')})`, params: [collectionId, ...terms] };
  }
  const parts = candidates.parts.map((part) => candidateSql(part, collectionId));
  return {
    sql: parts.map((part) => `SELECT record_id FROM (${part.sql})`).join(candidates.kind === 'and' ? ' INTERSECT ' : ' UNION '),
    params: parts.flatMap((part) => part.params),
  };
}

/** The `vec0` mirror of one dimension (unfiltered searches): unit vectors, L2 metric. */
const mirrorTable = (dimension: number): string => `tool_vdb_unit_${dimension}`;

/** Records whose vector is all zeros (no direction: cosine distance 1 to every query). */
const ZERO = 'tool_vdb_zero';

/** The bytes of a Float64Array, for a blob. */
const bytesOf = (array: Float64Array): Buffer => Buffer.from(array.buffer, array.byteOffset, array.byteLength);

/** A blob of float64s back as a Float64Array (copied: the driver's buffer need not be aligned). */
function float64s(bytes: Uint8Array): Float64Array {
  if (bytes.byteLength % 8 !== 0) throw new Error('malformed float64 blob');
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float64Array(copy.buffer);
}

/** `vector` scaled to length 1, or null for the zero vector. */
function toUnit(vector: Float32Array): Float32Array | null {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) return null;
  const scale = 1 / Math.sqrt(sum);
  return vector.map((x) => x * scale);
}

export { getLoadablePath as sqliteVecExtensionPath } from 'sqlite-vec';
