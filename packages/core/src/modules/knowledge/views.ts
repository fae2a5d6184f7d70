import type { KnowledgeBase } from './entities/knowledge-base.entity.js';
import type { KnowledgeSource } from './entities/knowledge-source.entity.js';

const dateTime = { type: 'string', format: 'date-time' };
const nullable = (type: string, extra: Record<string, unknown> = {}) => ({ type: [type, 'null'], ...extra });

export const knowledgeBaseSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'embedder', 'embeddingModelId', 'dimension', 'chunking', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    description: nullable('string'),
    embedder: { type: 'string', description: 'The embedder the chunks were embedded with (`hashing-v1-384`, `ai-<modelId>-<dimension>`).' },
    embeddingModelId: nullable('string', { description: 'The AI model that embeds, or null for the server embedder.' }),
    dimension: { type: 'integer' },
    chunking: {
      type: 'object',
      required: ['chunkTokens', 'overlapTokens', 'parentTokens'],
      properties: { chunkTokens: { type: 'integer' }, overlapTokens: { type: 'integer' }, parentTokens: { type: 'integer' } },
    },
    stats: {
      type: 'object',
      description: 'Answered by GET of one base.',
      required: ['sources', 'ready', 'failed', 'chunks'],
      properties: { sources: { type: 'integer' }, ready: { type: 'integer' }, failed: { type: 'integer' }, chunks: { type: 'integer', description: 'Matched (child) chunks.' } },
    },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const knowledgeSourceSchema = {
  type: 'object',
  required: ['id', 'baseId', 'kind', 'name', 'mediaType', 'url', 'sizeBytes', 'metadata', 'status', 'progress', 'error', 'attempts', 'indexedAt', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    baseId: { type: 'string', format: 'uuid' },
    kind: { type: 'string', enum: ['file', 'url'] },
    name: { type: 'string' },
    mediaType: { type: 'string' },
    url: nullable('string'),
    sizeBytes: { type: 'integer' },
    metadata: { type: 'object', additionalProperties: true },
    status: { type: 'string', enum: ['queued', 'parsing', 'chunking', 'embedding', 'ready', 'failed'] },
    progress: {
      type: 'object',
      required: ['parsed', 'chunks', 'embedded'],
      properties: {
        parsed: { type: 'integer', description: 'Pages (PDF) or documents parsed.' },
        chunks: { type: 'integer', description: 'Matched (child) chunks cut.' },
        embedded: { type: 'integer', description: 'Chunks embedded so far.' },
      },
    },
    error: nullable('string', { description: 'Why the source failed (status `failed`).' }),
    attempts: { type: 'integer', description: 'Times ingestion was started for the current version.' },
    indexedAt: nullable('string', { format: 'date-time' }),
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const citationSchema = {
  type: 'object',
  required: ['sourceId', 'sourceName', 'url', 'page', 'headingPath', 'start', 'end'],
  properties: {
    sourceId: { type: 'string', format: 'uuid' },
    sourceName: { type: 'string' },
    url: nullable('string'),
    page: nullable('integer', { description: 'PDF page of the matched chunk.' }),
    headingPath: { type: 'array', items: { type: 'string' }, description: 'Headings above the passage, outermost first.' },
    start: { type: 'integer', description: 'Character offset of the passage in the source text.' },
    end: { type: 'integer' },
  },
};

export const passageSchema = {
  type: 'object',
  required: ['id', 'text', 'score', 'match', 'citation'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    text: { type: 'string' },
    score: { type: 'number', description: 'Fused reciprocal-rank score scaled to (0, 1], or the rerank rating / 10.' },
    match: {
      type: 'object',
      required: ['chunkId', 'start', 'end', 'keywordRank', 'vectorRank'],
      properties: {
        chunkId: { type: 'string', format: 'uuid' },
        start: { type: 'integer' },
        end: { type: 'integer' },
        keywordRank: nullable('integer'),
        vectorRank: nullable('integer'),
      },
    },
    citation: citationSchema,
  },
};

export const retrieveSchema = { type: 'object', required: ['query', 'items'], properties: { query: { type: 'string' }, items: { type: 'array', items: passageSchema } } };

export const sourceBatchSchema = { type: 'object', required: ['items'], properties: { items: { type: 'array', items: knowledgeSourceSchema } } };

export const toBaseView = (base: KnowledgeBase, stats?: { sources: number; ready: number; failed: number; chunks: number }) => ({
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

export const toSourceView = (source: KnowledgeSource) => ({
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
