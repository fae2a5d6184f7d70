import type { EntityManager } from '@mikro-orm/core';
import { dialectOf } from '../../../kernel/dialect.js';
import type { VectorHit, VectorSearchRequest, VectorStore } from '../../../ports/vector-store.js';
import { vdbRecordTable as t } from '../entities/vdb-record.entity.js';
import { compileVdbFilter } from './filter-sql.js';
import { bytesToVector, cosineDistance, TopK } from './vector-codec.js';

/** The dialect of a manager, as its database adapter declared it (kept here for the modules that import it from the vector store). */
export { dialectOf };

/**
 * The embedded default VectorStore, for any database: the filter runs in SQL over the records
 * table (so only matching records are read), and the cosine distances of the matching records'
 * embeddings are computed in process, in pages of `pageSize` rows, keeping the k nearest. Exact,
 * filter-first, no extension needed: this is what a PostgreSQL without pgvector uses. Its cost is
 * linear in the number of matching records (see `bench/vector.mjs`).
 */
export class ExactScanVectorStore implements VectorStore {
  readonly name = 'exact-scan';

  constructor(private readonly pageSize = 2000) {}

  async upsert(): Promise<void> {}

  async remove(): Promise<void> {}

  async search(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]> {
    const dialect = dialectOf(em);
    const connection = em.getConnection();
    const top = new TopK(request.limit);
    // Keyset paging by id: the nil UUID sorts before every id on both dialects.
    let after = '00000000-0000-0000-0000-000000000000';
    const cast = dialect === 'postgresql' ? '::uuid' : '';
    for (;;) {
      const params: unknown[] = [request.collectionId, request.vector.length, after];
      let where = `r.${t.collection} = ?${cast} AND r.${t.dimension} = ? AND r.${t.id} > ?${cast}`;
      if (request.filter) {
        const fragment = compileVdbFilter(request.filter, dialect, { columns: { tags: `r.${t.tags}`, metadata: `r.${t.metadata}` } });
        where += ` AND ${fragment.sql}`;
        params.push(...fragment.params);
      }
      const rows = (await connection.execute(
        `SELECT r.${t.id} AS id, r.${t.embedding} AS embedding FROM ${t.table} r WHERE ${where} ORDER BY r.${t.id} LIMIT ${this.pageSize}`,
        params,
        'all',
        em.getTransactionContext(),
      )) as Array<{ id: string; embedding: Uint8Array }>;
      for (const row of rows) top.offer(row.id, cosineDistance(request.vector, bytesToVector(row.embedding)));
      if (rows.length < this.pageSize) break;
      after = rows[rows.length - 1]!.id;
    }
    return top.items;
  }
}
