import { compileVdbFilter, type VectorEntry, type VectorHit, type VectorSearchRequest, type VectorStore } from '@trellis/core';
import pg from 'pg';

export interface PgVectorStoreOptions {
  /** PostgreSQL with the `vector` extension available (it is created if missing). */
  url: string;
  /** Table that holds the vectors (default `trellis_vectors`). */
  table?: string;
  /** Connections in the pool (default 5). */
  maxConnections?: number;
}

const vectorLiteral = (vector: Float32Array): string => `[${Array.from(vector, (x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;

/**
 * VectorStore on PostgreSQL with pgvector. Each record's vector is kept with a copy of its tags
 * and metadata in one table (`vector` without a fixed dimension, so collections of any dimension
 * share it), and a search is one statement: the filter (compiled to `jsonb` SQL) in the WHERE
 * clause, `ORDER BY embedding <=> query` (cosine distance), `LIMIT k`. No approximate index is
 * created, so the plan is an exact scan of the matching rows and a search answers `limit` hits
 * whenever that many records match — an HNSW or IVFFlat index would filter after the index scan
 * and could answer fewer (pgvector's documented behaviour).
 *
 * The table lives in the database at `url`, reached with its own pool: when that is not the
 * application database, a record and its vector are written by two connections. The record's
 * transaction waits for the vector write, so a failed vector write leaves no record; a record
 * whose transaction fails after its vector was written leaves an orphan vector that searches skip.
 */
export class PgVectorStore implements VectorStore {
  readonly name = 'pgvector';
  private readonly pool: pg.Pool;
  private readonly table: string;
  private started?: Promise<void>;

  constructor(options: PgVectorStoreOptions) {
    this.table = options.table ?? 'trellis_vectors';
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(this.table)) throw new Error('PgVectorStore: table must be a plain lower-case SQL identifier');
    this.pool = new pg.Pool({ connectionString: options.url, max: options.maxConnections ?? 5 });
  }

  start(): Promise<void> {
    this.started ??= (async () => {
      await this.pool.query('CREATE EXTENSION IF NOT EXISTS vector');
      await this.pool.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (id uuid PRIMARY KEY, collection_id uuid NOT NULL, dimension int NOT NULL, embedding vector NOT NULL, tags jsonb NOT NULL, metadata jsonb NOT NULL)`,
      );
      await this.pool.query(`CREATE INDEX IF NOT EXISTS ${this.table}_collection ON ${this.table} (collection_id, dimension)`);
    })();
    return this.started;
  }

  async upsert(_em: unknown, entries: readonly VectorEntry[]): Promise<void> {
    await this.start();
    for (const entry of entries) {
      await this.pool.query(
        `INSERT INTO ${this.table} (id, collection_id, dimension, embedding, tags, metadata) VALUES ($1, $2, $3, $4::vector, $5::jsonb, $6::jsonb)
         ON CONFLICT (id) DO UPDATE SET collection_id = EXCLUDED.collection_id, dimension = EXCLUDED.dimension, embedding = EXCLUDED.embedding, tags = EXCLUDED.tags, metadata = EXCLUDED.metadata`,
        [entry.id, entry.collectionId, entry.vector.length, vectorLiteral(entry.vector), JSON.stringify(entry.tags), JSON.stringify(entry.metadata)],
      );
    }
  }

  async remove(_em: unknown, collectionId: string, ids: readonly string[]): Promise<void> {
    await this.start();
    await this.pool.query(`DELETE FROM ${this.table} WHERE collection_id = $1 AND id = ANY($2::uuid[])`, [collectionId, [...ids]]);
  }

  async search(_em: unknown, request: VectorSearchRequest): Promise<VectorHit[]> {
    await this.start();
    const params: unknown[] = [vectorLiteral(request.vector), request.collectionId, request.vector.length];
    let where = 'v.collection_id = $2 AND v.dimension = $3';
    if (request.filter) {
      const fragment = compileVdbFilter(request.filter, 'postgresql', {
        columns: { tags: 'v.tags', metadata: 'v.metadata' },
        placeholder: (index) => `$${index}`,
        offset: params.length,
      });
      where += ` AND ${fragment.sql}`;
      params.push(...fragment.params);
    }
    params.push(request.limit);
    const result = await this.pool.query<{ id: string; distance: number }>(
      `SELECT v.id, COALESCE(NULLIF(v.embedding <=> $1::vector, 'NaN'::float8), 1) AS distance FROM ${this.table} v WHERE ${where} ORDER BY distance, v.id LIMIT $${params.length}`,
      params,
    );
    return result.rows.map((row) => ({ id: row.id, distance: Number(row.distance) }));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
