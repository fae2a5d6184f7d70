import type { MigrationDefinition } from '../../../ports/database.js';

// On PostgreSQL, one ALTER TABLE per table changes the type and (where the server has lz4) the
// compression together, so the rewrite of existing rows is already lz4-compressed.
const alterContent = (type: 'json' | 'jsonb') =>
  'do $$ begin ' +
  "if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then " +
  `alter table "documents" alter column "content" type ${type} using "content"::${type}, alter column "content" set compression lz4; ` +
  `alter table "document_versions" alter column "content" type ${type} using "content"::${type}, alter column "content" set compression lz4; ` +
  'else ' +
  `alter table "documents" alter column "content" type ${type} using "content"::${type}; ` +
  `alter table "document_versions" alter column "content" type ${type} using "content"::${type}; ` +
  'end if; end $$';

/**
 * Written by hand (MikroORM's schema diff treats `json` and `jsonb` alike). On PostgreSQL the
 * content columns of documents and their versions become `json` instead of `jsonb`: a write
 * stores the canonical JSON text as it is (validated, not converted to jsonb's binary form, which
 * costs more than the rest of a 1 MB edit), and a read returns that text. Nothing queries inside
 * content, and `json` has no equality operator: content is never compared or grouped in SQL.
 * Existing rows convert as they are; their `content_hash` stays valid, because the hash is taken
 * over the canonical JSON of the parsed content, whatever key order or spacing the column holds.
 * SQLite's columns are `json` already: nothing changes there.
 */
export const migration: MigrationDefinition = {
  name: '20261124095500_documents_content_json',
  up: {
    sqlite: [],
    postgresql: [alterContent('json')],
  },
  down: {
    sqlite: [],
    postgresql: [alterContent('jsonb')],
  },
};
