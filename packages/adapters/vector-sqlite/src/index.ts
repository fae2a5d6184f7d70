import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { compileVdbFilter, dialectOf, vdbRecordTable as t, vectorToBytes, type VectorHit, type VectorSearchRequest, type VectorStore } from '@trellis/core';
import { getLoadablePath } from 'sqlite-vec';

export interface SqliteVecVectorStoreOptions {
  /** Path of the sqlite-vec loadable extension (default: the one shipped by the `sqlite-vec` package for this platform). */
  extensionPath?: string;
}

/** The raw `sqlite3` connection behind MikroORM's SQLite driver (knex). */
interface Sqlite3Connection {
  loadExtension(path: string, callback: (error: Error | null) => void): void;
}

interface KnexClient {
  acquireConnection(): Promise<Sqlite3Connection>;
  releaseConnection(connection: Sqlite3Connection): Promise<void>;
}

/**
 * The VectorStore the host uses on SQLite: exact cosine k-NN with sqlite-vec
 * (`vec_distance_cosine`) inside the application's SQLite database. The filter is compiled to SQL
 * and applied in the same statement before ranking, so a search returns `limit` hits whenever that
 * many records match. Vectors are read from the records table (`tool_vdb_records.embedding`,
 * float32 little-endian), so `upsert` and `remove` have nothing to do.
 *
 * The extension is loaded into the ORM's connection at start (`sqlite3`'s `loadExtension`);
 * Trellis's SQLite adapter keeps exactly one connection open for the life of the process.
 */
export class SqliteVecVectorStore implements VectorStore {
  readonly name = 'sqlite-vec';
  private readonly extensionPath: string;
  private orm?: MikroORM;
  private loading?: Promise<void>;

  constructor(options: SqliteVecVectorStoreOptions = {}) {
    this.extensionPath = options.extensionPath ?? getLoadablePath();
  }

  async start(orm: MikroORM): Promise<void> {
    if (dialectOf(orm.em) !== 'sqlite') throw new Error('SqliteVecVectorStore needs the SQLite database adapter (@trellis/db-sqlite).');
    this.orm = orm;
    await this.load();
  }

  /** sqlite-vec's version, which also proves the extension is loaded. */
  async version(em: EntityManager): Promise<string> {
    const [row] = (await em.getConnection().execute('SELECT vec_version() AS version', [], 'all')) as Array<{ version: string }>;
    return row!.version;
  }

  async upsert(): Promise<void> {}

  async remove(): Promise<void> {}

  async search(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]> {
    try {
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
        await new Promise<void>((resolve, reject) => connection.loadExtension(this.extensionPath, (error) => (error ? reject(error) : resolve())));
      } finally {
        await client.releaseConnection(connection);
      }
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }
}

export { getLoadablePath as sqliteVecExtensionPath } from 'sqlite-vec';
