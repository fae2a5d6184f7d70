import { dateTime, jsonObject, nullable, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { KnowledgeBase } from './entities/knowledge-base.entity.js';
import type { KnowledgeSource } from './entities/knowledge-source.entity.js';

/** The knowledge base responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
export const knowledgeBaseSchema = Type.Object({
  id: uuid(),
  name: Type.String(),
  description: nullable(Type.String()),
  embedder: Type.String({ description: 'The embedder the chunks were embedded with (`hashing-v1-384`, `ai-<modelId>-<dimension>`).' }),
  embeddingModelId: nullable(Type.String(), { description: 'The AI model that embeds, or null for the server embedder.' }),
  dimension: Type.Integer(),
  chunking: Type.Object({ chunkTokens: Type.Integer(), overlapTokens: Type.Integer(), parentTokens: Type.Integer() }),
  stats: Type.Optional(
    Type.Object(
      { sources: Type.Integer(), ready: Type.Integer(), failed: Type.Integer(), chunks: Type.Integer({ description: 'Matched (child) chunks.' }) },
      { description: 'Answered by GET of one base.' },
    ),
  ),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type KnowledgeBaseView = Static<typeof knowledgeBaseSchema>;

export const knowledgeSourceSchema = Type.Object({
  id: uuid(),
  baseId: uuid(),
  kind: stringEnum(['file', 'url']),
  name: Type.String(),
  mediaType: Type.String(),
  url: nullable(Type.String()),
  sizeBytes: Type.Integer(),
  metadata: jsonObject({ additionalProperties: true }),
  status: stringEnum(['queued', 'parsing', 'chunking', 'embedding', 'ready', 'failed']),
  progress: Type.Object({
    parsed: Type.Integer({ description: 'Pages (PDF) or documents parsed.' }),
    chunks: Type.Integer({ description: 'Matched (child) chunks cut.' }),
    embedded: Type.Integer({ description: 'Chunks embedded so far.' }),
  }),
  error: nullable(Type.String(), { description: 'Why the source failed (status `failed`).' }),
  attempts: Type.Integer({ description: 'Times ingestion was started for the current version.' }),
  indexedAt: nullable(dateTime()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type KnowledgeSourceView = Static<typeof knowledgeSourceSchema>;

export const citationSchema = Type.Object({
  sourceId: uuid(),
  sourceName: Type.String(),
  url: nullable(Type.String()),
  page: nullable(Type.Integer(), { description: 'PDF page of the matched chunk.' }),
  headingPath: Type.Array(Type.String(), { description: 'Headings above the passage, outermost first.' }),
  start: Type.Integer({ description: 'Character offset of the passage in the source text.' }),
  end: Type.Integer(),
});

export const passageSchema = Type.Object({
  id: uuid(),
  text: Type.String(),
  score: Type.Number({ description: 'Fused reciprocal-rank score scaled to (0, 1], or the rerank rating / 10.' }),
  match: Type.Object({ chunkId: uuid(), start: Type.Integer(), end: Type.Integer(), keywordRank: nullable(Type.Integer()), vectorRank: nullable(Type.Integer()) }),
  citation: citationSchema,
});

export const retrieveSchema = Type.Object({ query: Type.String(), items: Type.Array(passageSchema) });

export const sourceBatchSchema = Type.Object({ items: Type.Array(knowledgeSourceSchema) });

export const toBaseView = (base: KnowledgeBase, stats?: { sources: number; ready: number; failed: number; chunks: number }): KnowledgeBaseView => ({
  id: base.id,
  name: base.name,
  description: base.description,
  embedder: base.embedder,
  embeddingModelId: base.embeddingModelId,
  dimension: base.dimension,
  chunking: base.chunking,
  ...(stats ? { stats } : {}),
  createdAt: base.createdAt.toISOString(),
  updatedAt: base.updatedAt.toISOString(),
});

export const toSourceView = (source: KnowledgeSource): KnowledgeSourceView => ({
  id: source.id,
  baseId: typeof source.base === 'object' ? source.base.id : (source.base as string),
  kind: source.kind,
  name: source.name,
  mediaType: source.mediaType,
  url: source.url,
  sizeBytes: source.sizeBytes,
  metadata: source.metadata,
  status: source.status,
  progress: source.progress,
  error: source.error,
  attempts: source.attempts,
  indexedAt: source.indexedAt ? source.indexedAt.toISOString() : null,
  createdAt: source.createdAt.toISOString(),
  updatedAt: source.updatedAt.toISOString(),
});
