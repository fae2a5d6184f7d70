import type { ServiceIdentifier } from 'inversify';

/**
 * Turns texts into vectors for the vector database. Contract:
 * - `embed` answers one vector of length `dimension` per text, in order;
 * - the same text always gives the same vector (collections store vectors, queries are compared
 *   with them), so `name` must change whenever the model or its settings change;
 * - failures throw (the tool service answers 422 `vdb_embedding_failed`).
 *
 * Default: `HashingEmbedder` (lexical feature hashing, no model). Adapters: an AiProvider's
 * `embed` (OpenAI-compatible embeddings).
 */
export interface Embedder {
  /** Stable identifier of the model and its settings, stored with every collection (`hashing-v1-384`). */
  readonly name: string;
  readonly dimension: number;
  embed(texts: readonly string[], options?: { signal?: AbortSignal }): Promise<Float32Array[]>;
}

export const embedderServiceIdentifier: ServiceIdentifier<Embedder> = Symbol.for('@trellis/core/Embedder');
