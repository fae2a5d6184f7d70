import type { ServiceIdentifier } from 'inversify';
import { s, type InferConfig } from '../../kernel/config/schema.js';

/** Configuration of knowledge bases, found at `config.knowledge`. */
export const knowledgeConfigSchema = s.object({
  maxFileBytes: s
    .int()
    .range(1024, 1024 * 1024 * 1024)
    .default(20 * 1024 * 1024)
    .describe('Largest file one upload may carry, in bytes (larger: 413 knowledge_file_too_large). The upload request itself may be this plus 64 KiB of form fields.'),
  maxUrlBytes: s.int().range(1024, 1024 * 1024 * 1024).default(10 * 1024 * 1024).describe('Largest response body a URL source may answer, in bytes; a larger one fails the source.'),
  urlTimeoutMs: s.int().range(100, 600_000).default(30_000).describe('Time limit of fetching a URL source.'),
  maxSourcesPerBase: s.int().range(1, 1_000_000).default(10_000).describe('Sources one knowledge base may hold (more: 409 knowledge_base_full).'),
  chunking: s.object({
    chunkTokens: s.int().range(16, 8192).default(200).describe('Default size of a matched (child) chunk, in tokens (GPT o200k tokenizer), for knowledge bases that do not set one.'),
    overlapTokens: s.int().range(0, 4096).default(30).describe('Default overlap between neighbouring child chunks, in tokens.'),
    parentTokens: s.int().range(0, 32_768).default(800).describe('Default size of the parent passage returned for a matched child chunk, in tokens; 0 returns the child chunks themselves.'),
  }),
  ingestion: s.object({
    enabled: s.boolean().default(true).describe('Whether this process ingests queued sources (parse, chunk, embed). Set false on processes that only serve requests.'),
    pollIntervalMs: s.int().range(50, 600_000).default(500).describe('How often this process looks for queued sources.'),
    leaseMs: s.int().range(1000, 3_600_000).default(300_000).describe('How long a process owns a source it ingests (renewed at each step); a source whose process died is taken up again once it expires. A process that stops gracefully gives its source back at once.'),
    maxAttempts: s.int().range(1, 100).default(3).describe('Times a source is tried before it fails for good (a source whose process keeps dying).'),
    embedBatchSize: s.int().range(1, 2048).default(64).describe('Chunks embedded per embedder call.'),
  }),
  retrieval: s.object({
    defaultLimit: s.int().range(1, 100).default(5).describe('Passages a retrieval answers when it asks for no limit.'),
    maxLimit: s.int().range(1, 1000).default(50).describe('Largest limit of a retrieval.'),
    candidates: s.int().range(1, 10_000).default(50).describe('Chunks each method (keyword, vector) proposes before the ranks are fused.'),
    rrfK: s.int().range(1, 1000).default(60).describe('The k of reciprocal rank fusion: a chunk scores 1/(k + rank) per method that found it.'),
  }),
});

export type KnowledgeConfig = InferConfig<typeof knowledgeConfigSchema>;

export const knowledgeConfigServiceIdentifier: ServiceIdentifier<KnowledgeConfig> = Symbol.for('@trellis/core/knowledge/Config');
