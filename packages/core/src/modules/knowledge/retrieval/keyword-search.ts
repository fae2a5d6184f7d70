import type { EntityManager } from '@mikro-orm/core';
import { vdbRecordTable as r, compileVdbFilter, type VdbFilter } from '../../tools/index.js';
import { chunkTable as t } from '../entities/knowledge-chunk.entity.js';
import { dialectOf } from './dialect.js';

/** The query's words (letters and digits), lower-cased, each once, at most 32. */
export function queryTerms(query: string): string[] {
  return [...new Set((query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((term) => term.length <= 64))].slice(0, 32);
}

/**
 * Child chunks of a base ranked by keyword relevance to any of the query's words: SQLite FTS5 with
 * BM25 (porter stemming), PostgreSQL full-text search (`english` configuration) ranked by
 * `ts_rank_cd`. A filter is applied to the chunk's vector record (the source's metadata) in SQL.
 */
export async function keywordSearch(em: EntityManager, request: { baseId: string; query: string; limit: number; filter: VdbFilter | null }): Promise<string[]> {
  const terms = queryTerms(request.query);
  if (terms.length === 0) return [];
  const dialect = dialectOf(em);
  const params: unknown[] = [];
  let sql: string;
  let join = '';
  let filterSql = '';
  if (request.filter) {
    const fragment = compileVdbFilter(request.filter, dialect, { columns: { tags: `r.${r.tags}`, metadata: `r.${r.metadata}` } });
    join = ` JOIN ${r.table} r ON r.${r.id} = c.id`;
    filterSql = ` AND ${fragment.sql}`;
    params.push(...fragment.params);
  }
  if (dialect === 'sqlite') {
    const match = terms.map((term) => `"${term}"`).join(' OR ');
    sql = `SELECT c.id AS id FROM ${t.fts} f JOIN ${t.table} c ON c.rowid = f.rowid${join} WHERE ${t.fts} MATCH ? AND c.base_id = ?${filterSql} ORDER BY bm25(${t.fts}), c.id LIMIT ${request.limit}`;
    params.unshift(match, request.baseId);
  } else {
    const tsquery = terms.join(' | ');
    sql = `SELECT c.id AS id FROM ${t.table} c${join} WHERE c.search @@ to_tsquery('english', ?) AND c.base_id = ?${filterSql} ORDER BY ts_rank_cd(c.search, to_tsquery('english', ?)) DESC, c.id LIMIT ${request.limit}`;
    params.unshift(tsquery, request.baseId);
    params.push(tsquery);
  }
  const rows = (await em.getConnection().execute(sql, params, 'all')) as Array<{ id: string }>;
  return rows.map((row) => row.id);
}
