import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { KnowledgeBaseSchema } from './entities/knowledge-base.entity.js';
import { KnowledgeChunkSchema } from './entities/knowledge-chunk.entity.js';
import { KnowledgeSourceSchema } from './entities/knowledge-source.entity.js';
import { knowledgeConfigSchema, knowledgeConfigServiceIdentifier, type KnowledgeConfig } from './knowledge.config.js';
import { migrations } from './migrations/index.js';
import { knowledgeRoutes } from './routes.js';
import { BaseEmbedders } from './services/base-embedders.js';
import { IngestionService } from './services/ingestion.service.js';
import { KnowledgeService } from './services/knowledge.service.js';
import { Reranker } from './services/reranker.js';
import { RetrievalService } from './services/retrieval.service.js';
import { KnowledgeRetrieverService, knowledgeRetrieverServiceIdentifier } from './knowledge-retriever.js';
import { retrievalKind } from './retrieval-block.js';
import { blockKindServiceIdentifier } from '../runs/index.js';

/**
 * Knowledge bases (docs/knowledge.md): files and URLs parsed, chunked by structure, embedded in the
 * background, and found again by hybrid (keyword + vector) retrieval with citations.
 */
export const knowledgeModule = defineModule({
  name: 'knowledge',
  dependsOn: ['identity', 'tools', 'ai'],
  config: knowledgeConfigSchema,
  entities: [KnowledgeBaseSchema, KnowledgeSourceSchema, KnowledgeChunkSchema],
  migrations,
  // The keyword index, written by hand in the migration: SQLite's FTS5 table (and its shadow
  // tables), PostgreSQL's generated tsvector column.
  schemaExtras: { tables: [/^knowledge_chunks_fts/], columns: { knowledge_chunks: ['search'] }, indexes: ['knowledge_chunks_search_index'] },
  container: ({ section }) =>
    new ContainerModule(({ bind }) => {
      bind(knowledgeConfigServiceIdentifier).toConstantValue(section as KnowledgeConfig);
      bind(BaseEmbedders).toSelf().inSingletonScope();
      bind(KnowledgeService).toSelf().inSingletonScope();
      bind(IngestionService).toSelf().inSingletonScope();
      bind(Reranker).toSelf().inSingletonScope();
      bind(RetrievalService).toSelf().inSingletonScope();
      bind(knowledgeRetrieverServiceIdentifier).to(KnowledgeRetrieverService).inSingletonScope();
      // The retrieval block kind (docs/runs.md, "Writing a block kind").
      bind(blockKindServiceIdentifier).toConstantValue(retrievalKind);
    }),
  routes: ({ section }) => knowledgeRoutes(section as KnowledgeConfig),
  jobs: [
    {
      name: 'knowledge.ingest',
      intervalMs: (config) => (config as unknown as { knowledge: KnowledgeConfig }).knowledge.ingestion.pollIntervalMs,
      async run({ em, log, signal, get }) {
        const config = get(knowledgeConfigServiceIdentifier);
        if (!config.ingestion.enabled) return;
        await get(IngestionService).drain(em, log, signal);
      },
    },
  ],
});
