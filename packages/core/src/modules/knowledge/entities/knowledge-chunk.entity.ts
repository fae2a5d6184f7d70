import { EntitySchema } from '@mikro-orm/core';
import { KnowledgeSource } from './knowledge-source.entity.js';

/**
 * A piece of a source. `child` chunks are matched (keyword index, vector); a matched child returns
 * its `parent` passage when the base has parents. Offsets are character offsets into the source's
 * extracted text; `page` is the PDF page, `headingPath` the headings above the chunk.
 * Rows are written and deleted in SQL (see `ChunkWriter`), never loaded as entities on hot paths.
 */
export class KnowledgeChunk {
  id!: string;
  baseId!: string;
  source!: KnowledgeSource;
  parentId!: string | null;
  role!: 'parent' | 'child';
  position!: number;
  text!: string;
  headingPath!: string[];
  page!: number | null;
  startOffset!: number;
  endOffset!: number;
  tokens!: number;
}

export const KnowledgeChunkSchema = new EntitySchema<KnowledgeChunk>({
  class: KnowledgeChunk,
  tableName: 'knowledge_chunks',
  indexes: [{ properties: ['baseId'] }, { properties: ['source'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    baseId: { type: 'uuid', fieldName: 'base_id' },
    // Deleting a source deletes its chunks (and, through triggers, their keyword rows).
    source: { kind: 'm:1', entity: () => KnowledgeSource, deleteRule: 'cascade' },
    parentId: { type: 'uuid', fieldName: 'parent_id', nullable: true },
    role: { type: 'string', length: 8 },
    position: { type: 'integer' },
    text: { type: 'text' },
    headingPath: { type: 'json' },
    page: { type: 'integer', nullable: true },
    startOffset: { type: 'integer' },
    endOffset: { type: 'integer' },
    tokens: { type: 'integer' },
  },
});

/** Table and column names for the SQL that writes and searches chunks. */
export const chunkTable = Object.freeze({ table: 'knowledge_chunks', fts: 'knowledge_chunks_fts' });
