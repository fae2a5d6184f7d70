import { inject, injectable } from 'inversify';
import { embedderServiceIdentifier, type Embedder } from '../../../ports/embedder.js';
import { AiGatewayService } from '../../ai/index.js';
import { AiModelEmbedder } from '../../tools/index.js';
import type { KnowledgeBase } from '../entities/knowledge-base.entity.js';
import { knowledgeErrors } from '../errors.js';

/**
 * The embedder of each knowledge base: the server's (the Embedder port) or an AI model's, built once
 * per model and dimension and kept, so a query does not set a provider up again.
 */
@injectable()
export class BaseEmbedders {
  private readonly byModel = new Map<string, Embedder>();

  constructor(
    @inject(embedderServiceIdentifier) readonly serverEmbedder: Embedder,
    @inject(AiGatewayService) private readonly gateway: AiGatewayService,
  ) {}

  /** The embedder for an AI model (`modelId`, `dimension`) or, without one, the server's. */
  resolve(modelId: string | null, dimension?: number): Embedder {
    if (modelId === null) return this.serverEmbedder;
    const key = `${modelId}:${dimension}`;
    let embedder = this.byModel.get(key);
    if (!embedder) {
      embedder = new AiModelEmbedder({ modelId, dimension: dimension!, embed: (input) => this.gateway.embed(input) });
      this.byModel.set(key, embedder);
    }
    return embedder;
  }

  of(base: KnowledgeBase): Embedder {
    return this.resolve(base.embeddingModelId, base.dimension);
  }

  /** Embeds `texts` with the base's embedder and checks every vector; throws `knowledge_embedding_failed`. */
  async embed(base: KnowledgeBase, texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const embedder = this.of(base);
    let vectors: Float32Array[];
    try {
      vectors = await embedder.embed(texts, { signal });
    } catch (error) {
      throw knowledgeErrors.embeddingFailed(`The embedder (${embedder.name}) could not embed: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    if (vectors.length !== texts.length || vectors.some((vector) => vector.length !== base.dimension || vector.some((x) => !Number.isFinite(x)))) {
      throw knowledgeErrors.embeddingFailed(`The embedder (${embedder.name}) answered malformed vectors (expected ${texts.length} of ${base.dimension} dimensions).`);
    }
    return vectors;
  }
}
