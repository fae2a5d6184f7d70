import { sqlDate, sqlStatement, type PreparedStatements, type SqlStatement } from '../../../ports/database.js';
import { vdbRecordTable as t } from '../entities/vdb-record.entity.js';
import type { VdbRecord } from '../entities/vdb-record.entity.js';

/**
 * The vector database's search-path reads (prepared once, see PreparedStatements): a search reads
 * its collection and its hit records without the ORM's read and hydration (they were the larger
 * part of a search's CPU over HTTP once the index answers in milliseconds). Writes go through the ORM.
 */

/** What a search needs of its collection. */
export interface VdbCollectionRef {
  id: string;
  embedder: string;
  dimension: number;
}

const collectionByName = sqlStatement(
  'tools.vdb_collection_by_name',
  'select "id", "embedder", "dimension" from "tool_vdb_collections" where "team_id" = ? and "name" = ?',
);

export async function findCollectionRef(sql: PreparedStatements, teamId: string, name: string): Promise<VdbCollectionRef | undefined> {
  const row = await sql.first<Record<string, unknown>>(collectionByName, [teamId, name]);
  return row ? { id: row['id'] as string, embedder: row['embedder'] as string, dimension: Number(row['dimension']) } : undefined;
}

/** What a search answers of a record (no embedding). */
export type VdbRecordFields = Pick<VdbRecord, 'id' | 'content' | 'tags' | 'metadata' | 'createdAt' | 'updatedAt'>;

const recordsByIds: SqlStatement[] = [];

/** The statement reading `count` records of one collection by id, made once per count. */
function recordsStatement(count: number): SqlStatement {
  return (recordsByIds[count] ??= sqlStatement(
    `tools.vdb_records_by_ids#${count}`,
    `select "${t.id}", "content", "${t.tags}", "${t.metadata}", "created_at", "updated_at" from "${t.table}" where "${t.collection}" = ? and "${t.id}" in (${Array.from({ length: count }, () => '?').join(', ')})`,
  ));
}

/** The records of `collectionId` among `ids` (in no particular order; missing ones are left out). */
export async function findRecordsByIds(sql: PreparedStatements, collectionId: string, ids: readonly string[]): Promise<VdbRecordFields[]> {
  if (ids.length === 0) return [];
  const rows = await sql.all<Record<string, unknown>>(recordsStatement(ids.length), [collectionId, ...ids]);
  const json = (value: unknown): unknown => (typeof value === 'string' && sql.dialect === 'sqlite' ? JSON.parse(value) : value);
  return rows.map((row) => ({
    id: row[t.id] as string,
    content: row['content'] as string,
    tags: json(row[t.tags]) as VdbRecord['tags'],
    metadata: json(row[t.metadata]) as VdbRecord['metadata'],
    createdAt: sqlDate(row['created_at'])!,
    updatedAt: sqlDate(row['updated_at'])!,
  }));
}
