import { EntitySchema } from '@mikro-orm/core';
import { VdbCollection } from './vdb-collection.entity.js';

/**
 * A vector database record: content, tags, metadata, and the content's embedding (little-endian
 * float32 bytes). Stores that run inside the database (`ExactScanVectorStore`, sqlite-vec) read
 * `embedding` from this table; others keep their own copy through the VectorStore port.
 */
export class VdbRecord {
  id!: string;
  collection!: VdbCollection;
  content!: string;
  tags!: Array<string | number | boolean>;
  metadata!: Record<string, unknown>;
  embedding!: Buffer;
  dimension!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const VdbRecordSchema = new EntitySchema<VdbRecord>({
  class: VdbRecord,
  tableName: 'tool_vdb_records',
  // (collection, id): the exact scan pages through a collection in id order.
  indexes: [{ properties: ['collection', 'createdAt'] }, { properties: ['collection', 'id'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    collection: { kind: 'm:1', entity: () => VdbCollection, deleteRule: 'cascade' },
    content: { type: 'text' },
    tags: { type: 'json' },
    metadata: { type: 'json' },
    embedding: { type: 'blob', lazy: true },
    dimension: { type: 'integer' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

/** Table and column names for stores that query the records table in SQL. */
export const vdbRecordTable = Object.freeze({
  table: 'tool_vdb_records',
  id: 'id',
  collection: 'collection_id',
  tags: 'tags',
  metadata: 'metadata',
  embedding: 'embedding',
  dimension: 'dimension',
});
