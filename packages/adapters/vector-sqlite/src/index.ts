import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { compileVdbFilter, dialectOf, inTransaction, vdbRecordTable as t, vectorToBytes, type VdbFilter, type VectorEntry, type VectorHit, type VectorSearchRequest, type VectorStore } from '@trellis/core';
import { getLoadablePath } from 'sqlite-vec';

export interface SqliteVecVectorStoreOptions {
  /** Path of the sqlite-vec loadable extension (default: the one shipped by the `sqlite-vec` package for this platform). */
  extensionPath?: string;
  /**
   * Whether filtered searches first pick candidates from the term index (default true). Off, every
   * filtered search scans the collection's rows (the benchmark's "before").
   */
  termIndex?: boolean;
}

/**
 * The raw connection behind MikroORM's SQLite driver (knex): sqlite3's `Database` (the default
 * driver; asynchronous, with a callback) or better-sqlite3's (`loadExtension(path)` is
 * synchronous and throws). better-sqlite3's has `pragma`, sqlite3's has not.
 */
interface Sqlite3Connection {
  loadExtension(path: string, callback?: (error: Error | null) => void): void;
  pragma?: unknown;
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
 * - Unfiltered searches: sqlite-vec's `vec0` virtual table (one per dimension,
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
  private loading?: Promise<void>;

  constructor(options: SqliteVecVectorStoreOptions = {}) {
    this.extensionPath = options.extensionPath ?? getLoadablePath();
    this.termIndex = options.termIndex ?? true;
  }

  async start(orm: MikroORM): Promise<void> {
    if (dialectOf(orm.em) !== 'sqlite') throw new Error('SqliteVecVectorStore needs the SQLite database adapter (@trellis/db-sqlite).');
    this.orm = orm;
    await this.load();
    await this.sync(orm.em.fork());
  }

  /**
   * Brings the `vec0` mirrors in line with the records table: adds the vectors of records written
   * while another store was bound (or by bulk loads) and drops those of deleted records.
   */
  async sync(em: EntityManager): Promise<void> {
    // Mirrors of earlier versions (raw vectors, cosine metric) are replaced by the unit-vector ones.
    const legacy = (await this.exec(em, "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'tool_vdb_vec_[0-9]*' AND sql LIKE '%USING vec0%'", [])) as Array<{ name: string }>;
    for (const { name } of legacy) await this.exec(em, `DROP TABLE ${name}`, []);
    await this.exec(em, `CREATE TABLE IF NOT EXISTS ${ZERO} (record_id text PRIMARY KEY, collection_id text NOT NULL, dimension integer NOT NULL)`, []);
    await this.exec(em, `CREATE INDEX IF NOT EXISTS ${ZERO}_collection_index ON ${ZERO} (collection_id, dimension, record_id)`, []);
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
    await this.ensureTermIndex(em);
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
    for (const entry of entries) {
      const table = await this.ensureTable(em, entry.vector.length);
      await this.exec(em, `DELETE FROM ${table} WHERE record_id = ?`, [entry.id]);
      await this.exec(em, `DELETE FROM ${ZERO} WHERE record_id = ?`, [entry.id]);
      const unit = toUnit(entry.vector);
      if (unit) await this.exec(em, `INSERT INTO ${table} (record_id, collection_id, embedding) VALUES (?, ?, ?)`, [entry.id, entry.collectionId, vectorToBytes(unit)]);
      else await this.exec(em, `INSERT INTO ${ZERO} (record_id, collection_id, dimension) VALUES (?, ?, ?)`, [entry.id, entry.collectionId, entry.vector.length]);
    }
  }

  async remove(em: EntityManager, _collectionId: string, ids: readonly string[]): Promise<void> {
    for (const table of await this.mirrorTables(em)) {
      for (const id of ids) await this.exec(em, `DELETE FROM ${table} WHERE record_id = ?`, [id]);
    }
    for (const id of ids) await this.exec(em, `DELETE FROM ${ZERO} WHERE record_id = ?`, [id]);
  }

  async search(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]> {
    try {
      const unit = request.filter ? null : toUnit(request.vector);
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

/** `vector` scaled to length 1, or null for the zero vector. */
function toUnit(vector: Float32Array): Float32Array | null {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) return null;
  const scale = 1 / Math.sqrt(sum);
  return vector.map((x) => x * scale);
}

export { getLoadablePath as sqliteVecExtensionPath } from 'sqlite-vec';
