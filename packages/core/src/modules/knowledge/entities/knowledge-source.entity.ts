import { EntitySchema } from '@mikro-orm/core';
import { KnowledgeBase } from './knowledge-base.entity.js';

/** Where a source is in its ingestion: queued, then each step, then ready or failed. */
export type SourceStatus = 'queued' | 'parsing' | 'chunking' | 'embedding' | 'ready' | 'failed';

/** What ingestion has done so far. */
export interface SourceProgress {
  /** Pages (PDF) or sections parsed; 1 for a file without pages. */
  parsed: number;
  chunks: number;
  embedded: number;
}

/**
 * One file or URL of a knowledge base. The row is also the ingestion job: its `status` says what is
 * left to do, and `leaseUntil` which process owns it until when, so a source whose process died is
 * taken up again (see `IngestionService`). The original bytes are kept for re-indexing.
 */
export class KnowledgeSource {
  id!: string;
  base!: KnowledgeBase;
  kind!: 'file' | 'url';
  name!: string;
  mediaType!: string;
  url!: string | null;
  sizeBytes!: number;
  data!: Buffer | null;
  metadata!: Record<string, unknown>;
  status!: SourceStatus;
  progress!: SourceProgress;
  error!: string | null;
  attempts!: number;
  leaseUntil!: Date | null;
  indexedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const KnowledgeSourceSchema = new EntitySchema<KnowledgeSource>({
  class: KnowledgeSource,
  tableName: 'knowledge_sources',
  indexes: [{ properties: ['base', 'createdAt'] }, { properties: ['status', 'leaseUntil'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    base: { kind: 'm:1', entity: () => KnowledgeBase, deleteRule: 'cascade' },
    kind: { type: 'string', length: 8 },
    name: { type: 'string', length: 500 },
    mediaType: { type: 'string', length: 200 },
    url: { type: 'text', nullable: true },
    sizeBytes: { type: 'integer' },
    data: { type: 'blob', nullable: true, lazy: true },
    metadata: { type: 'json' },
    status: { type: 'string', length: 16 },
    progress: { type: 'json' },
    error: { type: 'text', nullable: true },
    attempts: { type: 'integer', default: 0 },
    leaseUntil: { type: 'datetime', nullable: true },
    indexedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
