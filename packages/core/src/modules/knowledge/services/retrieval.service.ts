import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { vectorStoreServiceIdentifier, type VectorStore } from '../../../ports/vector-store.js';
import type { VdbFilter } from '../../tools/index.js';
import type { KnowledgeBase } from '../entities/knowledge-base.entity.js';
import { chunkTable as t } from '../entities/knowledge-chunk.entity.js';
import { knowledgeConfigServiceIdentifier, type KnowledgeConfig } from '../knowledge.config.js';
import { fuseRankings } from '../retrieval/fuse.js';
import { keywordSearch } from '../retrieval/keyword-search.js';
import type { Passage, RetrievalMode } from '../../../ports/knowledge-retriever.js';
import { BaseEmbedders } from './base-embedders.js';
import { Reranker, type RerankOptions } from './reranker.js';

export type { Citation, Passage, RetrievalMode } from '../../../ports/knowledge-retriever.js';

export interface RetrievalRequest {
  query: string;
  limit?: number;
  mode?: RetrievalMode;
  filter?: VdbFilter | null;
  /** Passages scoring below this (0 to 1) are left out. */
  minScore?: number;
  rerank?: RerankOptions;
  /** Who asks, for the rerank model's access check. */
  userId: string;
  signal?: AbortSignal;
}

interface ChunkRow {
  id: string;
  source_id: string;
  parent_id: string | null;
  text: string;
  heading_path: string | string[];
  page: number | null;
  start_offset: number;
  end_offset: number;
  name: string;
  url: string | null;
}

const inList = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/**
 * Hybrid retrieval over one knowledge base: keyword and vector rankings of the child chunks fused
 * by reciprocal rank, each matched chunk replaced by its parent passage (one passage per parent, at
 * its best chunk's score), a score threshold, a limit, and an optional rerank by an AI model.
 */
@injectable()
export class RetrievalService {
  constructor(
    @inject(vectorStoreServiceIdentifier) private readonly store: VectorStore,
    @inject(BaseEmbedders) private readonly embedders: BaseEmbedders,
    @inject(Reranker) private readonly reranker: Reranker,
    @inject(knowledgeConfigServiceIdentifier) private readonly config: KnowledgeConfig,
  ) {}

  async retrieve(em: EntityManager, base: KnowledgeBase, request: RetrievalRequest): Promise<Passage[]> {
    const mode = request.mode ?? 'hybrid';
    const limit = Math.min(request.limit ?? this.config.retrieval.defaultLimit, this.config.retrieval.maxLimit);
    const candidates = Math.max(this.config.retrieval.candidates, limit * 2);
    const filter = request.filter ?? null;
    // The rerank model is checked first, so that one the user may not use is refused whatever the search finds.
    if (request.rerank) await this.reranker.check(em, request.userId, request.rerank.modelId);
    const [keyword, vector] = await Promise.all([
      mode === 'vector' ? null : keywordSearch(em, { baseId: base.id, query: request.query, limit: candidates, filter }),
      mode === 'keyword' ? null : this.vectorSearch(em, base, request.query, candidates, filter, request.signal),
    ]);
    const fused = fuseRankings({ keyword, vector }, this.config.retrieval.rrfK);
    if (!fused.length) return [];
    const rows = await this.rows(em, fused.map((hit) => hit.id));
    const parents = await this.rows(em, [...new Set(rows.map((row) => row.parent_id).filter((id): id is string => id !== null))]);
    const byId = new Map([...rows, ...parents].map((row) => [row.id, row]));
    const seen = new Set<string>();
    let passages: Passage[] = [];
    for (const hit of fused) {
      const chunk = byId.get(hit.id);
      if (!chunk) continue;
      const passage = chunk.parent_id ? (byId.get(chunk.parent_id) ?? chunk) : chunk;
      if (seen.has(passage.id)) continue;
      seen.add(passage.id);
      passages.push({
        id: passage.id,
        text: passage.text,
        score: hit.score,
        match: { chunkId: chunk.id, start: chunk.start_offset, end: chunk.end_offset, keywordRank: hit.keywordRank, vectorRank: hit.vectorRank },
        citation: {
          sourceId: passage.source_id,
          sourceName: passage.name,
          url: passage.url,
          page: chunk.page ?? passage.page,
          headingPath: typeof passage.heading_path === 'string' ? (JSON.parse(passage.heading_path) as string[]) : passage.heading_path,
          start: passage.start_offset,
          end: passage.end_offset,
        },
      });
    }
    if (request.rerank) passages = await this.reranker.rerank(em, request.userId, request.query, passages, request.rerank, request.signal);
    if (request.minScore !== undefined) passages = passages.filter((passage) => passage.score >= request.minScore!);
    return passages.slice(0, limit);
  }

  private async vectorSearch(em: EntityManager, base: KnowledgeBase, query: string, limit: number, filter: VdbFilter | null, signal?: AbortSignal): Promise<string[]> {
    const [vector] = await this.embedders.embed(base, [query], signal);
    const hits = await this.store.search(em, { collectionId: base.collection.id, vector: vector!, limit, filter });
    return hits.map((hit) => hit.id);
  }

  private async rows(em: EntityManager, ids: readonly string[]): Promise<ChunkRow[]> {
    if (!ids.length) return [];
    return (await em
      .getConnection()
      .execute(
        `SELECT c.id, c.source_id, c.parent_id, c.text, c.heading_path, c.page, c.start_offset, c.end_offset, s.name, s.url FROM ${t.table} c JOIN knowledge_sources s ON s.id = c.source_id WHERE c.id IN (${inList(ids.length)})`,
        [...ids],
        'all',
      )) as ChunkRow[];
  }
}
