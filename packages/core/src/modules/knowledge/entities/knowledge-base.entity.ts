import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';
import { VdbCollection } from '../../tools/index.js';

/** How a knowledge base cuts its sources into chunks (sizes in tokens). */
export interface ChunkingSettings {
  chunkTokens: number;
  overlapTokens: number;
  /** Size of the parent passage a matched chunk returns; 0: the chunk itself. */
  parentTokens: number;
}

/**
 * A knowledge base: a team's set of sources, cut into chunks that are found by keyword and by
 * vector. Its vectors live in a vector database collection of its own (`kb:<id>`, out of reach of
 * `/tool/vdb`), embedded by the server's embedder or by an AI model (`embeddingModelId`).
 */
export class KnowledgeBase {
  id!: string;
  team!: Team;
  name!: string;
  description!: string | null;
  embeddingModelId!: string | null;
  embedder!: string;
  dimension!: number;
  chunking!: ChunkingSettings;
  collection!: VdbCollection;
  createdAt!: Date;
  updatedAt!: Date;
}

export const KnowledgeBaseSchema = new EntitySchema<KnowledgeBase>({
  class: KnowledgeBase,
  tableName: 'knowledge_bases',
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    description: { type: 'text', nullable: true },
    embeddingModelId: { type: 'string', length: 100, nullable: true },
    embedder: { type: 'string', length: 200 },
    dimension: { type: 'integer' },
    chunking: { type: 'json' },
    collection: { kind: 'm:1', entity: () => VdbCollection, deleteRule: 'cascade' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
