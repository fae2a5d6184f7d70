import type { EntityManager } from '@mikro-orm/core';
import { executeStatement } from '../../../kernel/prepared-statements.js';
import { sqlStatement, type PreparedStatements, type SqlValue } from '../../../ports/database.js';

/**
 * The statements of the document write path, with every value bound as a parameter. MikroORM's
 * own statements (`nativeUpdate`, `flush`, and `Connection.execute(sql, params)` too) format each
 * value into the SQL text, escaping it with regular expressions: for a 1 MB document that is the
 * JSON text copied and scanned several times per write. Here they run through the database
 * adapter's `PreparedStatements.execute`, which hands the content to the driver as a bound string
 * (a `?::json` parameter on PostgreSQL), once. Statements run on the entity manager's connection,
 * inside its transaction when it has one, and are recorded in the query metrics and traces under
 * their names, without their values.
 */

export type Row = Record<string, unknown>;

const run = (sql: PreparedStatements, em: EntityManager, name: string, text: string, params: readonly SqlValue[]): Promise<Row[]> =>
  executeStatement<Row>(sql, sqlStatement(`documents.${name}`, text), params, em);

// The content columns are `json` on PostgreSQL: the text is checked and stored as it is (no jsonb conversion).
const jsonParam = (sql: PreparedStatements) => (sql.dialect === 'postgresql' ? '?::json' : '?');

/**
 * The content of a document with the hash and head version that go with it, read in one
 * statement (they must agree: the next version's delta is made against this content). The JSON
 * is parsed once, with no ORM snapshot of it.
 */
export async function readContent(sql: PreparedStatements, em: EntityManager, documentId: string, unlessHead: string | null = null): Promise<{ content: unknown; contentHash: string; headVersionId: string | null } | null> {
  // With `unlessHead`, the content is left out when the head version is that one (the caller has it).
  const rows = await run(
    sql,
    em,
    'read_content',
    unlessHead === null
      ? 'select content, content_hash, head_version_id from documents where id = ? and deleted_at is null'
      : 'select case when head_version_id = ? then null else content end as content, content_hash, head_version_id from documents where id = ? and deleted_at is null',
    unlessHead === null ? [documentId] : [unlessHead, documentId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    content: typeof row.content === 'string' ? JSON.parse(row.content) : (row.content ?? null),
    contentHash: String(row.content_hash),
    headVersionId: (row.head_version_id as string | null) ?? null,
  };
}

export interface ContentUpdate {
  documentId: string;
  /** Compare-and-swap: the hash the stored content must still have. */
  expectedHash: string;
  /** The new canonical JSON and its hash; left out when only other columns change. */
  content?: { json: string; hash: string };
  /** A new title, when it changes. */
  title?: string | null;
  /** The version recorded with this write (left out when none is: the head stays). */
  headVersionId?: string;
  now: Date;
  /** Refuse while a collaborative lease runs (REST writes). */
  requireUnlocked: boolean;
}

/** The compare-and-swap write of a document's content: the title when the update matched, or `null`. */
export async function updateContent(sql: PreparedStatements, em: EntityManager, update: ContentUpdate): Promise<{ title: string | null } | null> {
  const sets: string[] = [];
  const values: SqlValue[] = [];
  if (update.content) {
    sets.push(`content = ${jsonParam(sql)}`, 'content_hash = ?');
    values.push(update.content.json, update.content.hash);
  }
  if (update.title !== undefined) {
    sets.push('title = ?');
    values.push(update.title);
  }
  sets.push('updated_at = ?');
  values.push(update.now);
  if (update.headVersionId !== undefined) {
    sets.push('head_version_id = ?');
    values.push(update.headVersionId);
  }
  let where = 'id = ? and content_hash = ? and deleted_at is null';
  values.push(update.documentId, update.expectedHash);
  if (update.requireUnlocked) {
    where += ' and (collab_lease_until is null or collab_lease_until <= ?)';
    values.push(update.now);
  }
  const rows = await run(sql, em, 'update_content', `update documents set ${sets.join(', ')} where ${where} returning id, title`, values);
  return rows.length ? { title: (rows[0]!.title as string | null) ?? null } : null;
}

export interface VersionRow {
  id: string;
  documentId: string;
  contentHash: string;
  /** Canonical JSON of the whole content (a snapshot), or `null` with `delta`. */
  json: string | null;
  /** A block delta against `baseId` (see version-delta.ts). */
  delta: { text: string; baseId: string; chainLength: number } | null;
  title: string | null;
  source: string;
  authorId: string | null;
  authorKind: string | null;
  createdAt: Date;
}

export async function insertVersion(sql: PreparedStatements, em: EntityManager, row: VersionRow): Promise<void> {
  await run(
    sql,
    em,
    'insert_version',
    `insert into document_versions (id, document_id, content_hash, content, title, source, author_id, author_kind, created_at, base_id, delta, chain_length) values (?, ?, ?, ${jsonParam(sql)}, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      row.id,
      row.documentId,
      row.contentHash,
      // A delta row keeps the JSON literal null in the (not null) content column.
      row.json ?? 'null',
      row.title,
      row.source,
      row.authorId,
      row.authorKind,
      row.createdAt,
      row.delta?.baseId ?? null,
      row.delta?.text ?? null,
      row.delta?.chainLength ?? 0,
    ],
  );
}

/** The hash and delta chain length of a version (the base of the next delta). */
export async function versionHead(sql: PreparedStatements, em: EntityManager, versionId: string): Promise<{ contentHash: string; chainLength: number } | null> {
  const rows = await run(sql, em, 'version_head', 'select content_hash, chain_length from document_versions where id = ?', [versionId]);
  const row = rows[0];
  return row ? { contentHash: String(row.content_hash), chainLength: Number(row.chain_length) } : null;
}

export interface ChainLink {
  id: string;
  contentHash: string;
  /** The parsed snapshot (only on the oldest link). */
  content: unknown;
  delta: string | null;
}

/**
 * The versions from `versionId` back to the nearest snapshot, oldest (the snapshot) first, in one
 * recursive query.
 */
export async function versionChain(sql: PreparedStatements, em: EntityManager, versionId: string, maxLength: number): Promise<ChainLink[]> {
  const rows = await run(
    sql,
    em,
    'version_chain',
    'with recursive chain (id, base_id, content, delta, content_hash, depth) as (' +
      'select id, base_id, content, delta, content_hash, 0 from document_versions where id = ? ' +
      'union all select v.id, v.base_id, v.content, v.delta, v.content_hash, c.depth + 1 from document_versions v join chain c on v.id = c.base_id where c.delta is not null and c.depth < ?' +
      ') select id, content, delta, content_hash from chain order by depth desc',
    [versionId, maxLength],
  );
  return rows.map((row) => ({
    id: String(row.id),
    contentHash: String(row.content_hash),
    content: typeof row.content === 'string' ? JSON.parse(row.content) : row.content,
    delta: (row.delta as string | null) ?? null,
  }));
}
