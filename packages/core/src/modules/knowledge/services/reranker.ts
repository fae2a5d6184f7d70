import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { AiGatewayService } from '../../ai/index.js';
import type { Passage } from './retrieval.service.js';

export interface RerankOptions {
  /** The AI model (POST /ai/models) that judges relevance. */
  modelId: string;
  /** How many of the best fused passages it judges (default 20). */
  candidates?: number;
}

const instructions =
  'You judge search results. For each numbered passage, rate how well it answers the query, from 0 (unrelated) to 10 (answers it). ' +
  'Answer only with JSON: {"scores": [<one number per passage, in order>]}.';

/**
 * Reranks passages with an AI model: the model rates each passage's relevance to the query (0 to
 * 10) and the passages are ordered by that rating (the score becomes rating / 10). Passages beyond
 * `candidates` keep their order after the judged ones. An answer that is not the expected JSON
 * leaves the order as it was.
 */
@injectable()
export class Reranker {
  constructor(@inject(AiGatewayService) private readonly gateway: AiGatewayService) {}

  /** Refuses (404 `model_not_found`) a model the user may not use, or one without a provider. */
  async check(em: EntityManager, userId: string, modelId: string): Promise<void> {
    await this.gateway.check(em, userId, modelId);
  }

  async rerank(em: EntityManager, userId: string, query: string, passages: Passage[], options: RerankOptions, signal?: AbortSignal): Promise<Passage[]> {
    await this.check(em, userId, options.modelId);
    const judged = passages.slice(0, options.candidates ?? 20);
    if (!judged.length) return passages;
    const listing = judged.map((passage, index) => `[${index + 1}] ${passage.text.slice(0, 2000)}`).join('\n\n');
    let text = '';
    for await (const part of this.gateway.chat({ userId, modelId: options.modelId, request: { messages: [{ role: 'system', content: instructions }, { role: 'user', content: `Query: ${query}\n\nPassages:\n${listing}` }], temperature: 0, signal } })) {
      if (part.type === 'text-delta') text += part.delta;
    }
    const scores = parseScores(text, judged.length);
    if (!scores) return passages;
    const rated = judged.map((passage, index) => ({ ...passage, score: Math.max(0, Math.min(10, scores[index]!)) / 10 }));
    rated.sort((a, b) => b.score - a.score);
    return [...rated, ...passages.slice(judged.length)];
  }
}

function parseScores(text: string, count: number): number[] | null {
  const json = /\{[\s\S]*\}/.exec(text)?.[0];
  if (!json) return null;
  try {
    const scores = (JSON.parse(json) as { scores?: unknown }).scores;
    if (!Array.isArray(scores) || scores.length !== count || scores.some((score) => typeof score !== 'number' || !Number.isFinite(score))) return null;
    return scores as number[];
  } catch {
    return null;
  }
}
