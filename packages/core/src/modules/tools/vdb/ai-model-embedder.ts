import { TrellisError } from '../../../kernel/errors.js';
import type { Embedder } from '../../../ports/embedder.js';

/** Embeds texts with an AI model: `AiGatewayService.embed` in the host. */
export type AiEmbedFunction = (input: { modelId: string; texts: string[]; signal?: AbortSignal }) => Promise<{ embeddings: number[][] }>;

export interface AiModelEmbedderOptions {
  /** The AI model (POST /ai/models) whose provider's `embed` is called. */
  modelId: string;
  /** Vector length the model answers; any other length is an error, never stored. */
  dimension: number;
  embed: AiEmbedFunction;
}

/**
 * The AI-backed Embedder: the configured AI model's provider `embed` (for example
 * `@trellis/ai-openai`, OpenAI or any OpenAI-compatible `/embeddings` server). Selected with
 * `tools.vdb.embedder.modelId` and `.dimension`.
 *
 * Its name is `ai-<modelId>-<dimension>`: a collection created with it keeps that name and
 * dimension, so switching to another model or dimension makes the collection answer 422
 * `vdb_embedder_mismatch` instead of mixing incomparable vectors. Changing the embedding model
 * inside the same AI model's conf is not detected: create a new AI model instead.
 */
export class AiModelEmbedder implements Embedder {
  readonly name: string;
  readonly dimension: number;
  private readonly modelId: string;
  private readonly call: AiEmbedFunction;

  constructor(options: AiModelEmbedderOptions) {
    if (!options.modelId) throw new RangeError('AiModelEmbedder: modelId is required');
    if (!Number.isInteger(options.dimension) || options.dimension < 1 || options.dimension > 8192) throw new RangeError('AiModelEmbedder: dimension must be an integer from 1 to 8192');
    this.modelId = options.modelId;
    this.dimension = options.dimension;
    this.call = options.embed;
    this.name = `ai-${options.modelId}-${options.dimension}`;
  }

  async embed(texts: readonly string[], options: { signal?: AbortSignal } = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const { embeddings } = await this.call({ modelId: this.modelId, texts: [...texts], signal: options.signal });
    if (embeddings.length !== texts.length) throw failed(`AI model ${this.modelId} answered ${embeddings.length} embeddings for ${texts.length} texts.`);
    return embeddings.map((embedding) => {
      if (embedding.length !== this.dimension) {
        throw failed(`AI model ${this.modelId} answered ${embedding.length} dimensions but tools.vdb.embedder.dimension is ${this.dimension}; set the dimension the model answers (or conf.dimensions on the model).`);
      }
      return Float32Array.from(embedding);
    });
  }
}

const failed = (message: string) => new TrellisError('validation', 'vdb_embedding_failed', message);
