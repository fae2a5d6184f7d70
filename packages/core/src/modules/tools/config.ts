import type { ServiceIdentifier } from 'inversify';
import { s, type InferConfig } from '../../kernel/config/schema.js';

/** Configuration of the tool service, found at `config.tools`. */
export const toolsConfigSchema = s.object({
  vdb: s.object({
    embeddingDimension: s.int().range(8, 4096).default(384).describe('Vector length of the default (hashing) embedder. Changing it makes existing collections answer 422 vdb_embedder_mismatch until re-created.'),
    maxContentLength: s.int().range(1, 1_000_000).default(100_000).describe('Longest record content, in characters (longer: 422).'),
    maxSearchLimit: s.int().range(1, 1000).default(100).describe('Largest query.limit of a similarity search.'),
    defaultSearchLimit: s.int().range(1, 1000).default(10).describe('query.limit of a similarity search when none is given.'),
    embedder: s.object({
      modelId: s
        .string()
        .orUndefined()
        .describe('Id of an AI model (POST /ai/models) whose provider embeds records and queries instead of the default hashing embedder; its provider must implement embed (openai does). Unset: the hashing embedder.'),
      dimension: s
        .int()
        .range(1, 8192)
        .orUndefined()
        .describe('Vector length the AI model answers (for example 1536 for text-embedding-3-small, or the conf.dimensions you set); required with modelId. Collections keep the dimension they were created with: another one answers 422 vdb_embedder_mismatch.'),
    }),
  }),
  speech: s.object({
    maxTextLength: s.int().range(1, 100_000).default(2000).describe('Longest message text /tool/speech speaks, in characters; longer texts answer 400 speech_text_too_long.'),
    maxSentenceLength: s.int().range(20, 2000).default(200).describe('Texts are split at sentence boundaries into pieces of at most this many characters, synthesised one by one.'),
    maxConcurrent: s
      .int()
      .range(1, 256)
      .default(2)
      .describe('Pieces synthesised at once in this process, over all teams: the most espeak-ng processes (and MP3 encodings) running. Others wait their turn, teams taking turns piece by piece.'),
    maxConcurrentPerTeam: s.int().range(1, 256).default(1).describe('Pieces one team may have synthesised at once in this process (at most maxConcurrent).'),
    maxQueuedPerTeam: s
      .int()
      .range(0, 10_000)
      .default(4)
      .describe('Requests of one team that may wait for their turn in this process, besides those being spoken; one more answers 429 speech_busy with Retry-After.'),
    maxQueued: s.int().range(0, 100_000).default(64).describe('Requests of all teams that may wait for their turn in this process; one more answers 429 speech_busy with Retry-After.'),
  }),
  anonymous: s.object({
    accessTokenTtlSeconds: s.int().range(60, 86_400).default(3600).describe('Lifetime of an anonymous access token (the spec: 1 hour).'),
    refreshTokenTtlSeconds: s.int().range(300).default(2_592_000).describe('Lifetime of an anonymous refresh token (the spec: 30 days); each rotation issues a new one.'),
    rateLimit: s.object({
      windowSeconds: s.int().range(1, 3600).default(60).describe('Length of one rate-limit window of the tool-service OAuth endpoints.'),
      perIp: s.int().range(1).default(30).describe('Requests one client address may make to each of /tool/home/oauth/{anonymous,token,rtoken} per window.'),
      perIdentifier: s.int().range(1).default(10).describe('Sign-in attempts per anonymous identifier per window.'),
    }),
  }),
});

export type ToolsConfig = InferConfig<typeof toolsConfigSchema>;

export const toolsConfigServiceIdentifier: ServiceIdentifier<ToolsConfig> = Symbol.for('@trellis/core/tools/Config');
