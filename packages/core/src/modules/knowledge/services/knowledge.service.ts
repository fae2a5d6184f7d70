import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { inTransaction } from '../../../kernel/transaction.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { vectorStoreServiceIdentifier, type VectorStore } from '../../../ports/vector-store.js';
import { Team, TeamService } from '../../identity/index.js';
import { AiGatewayService } from '../../ai/index.js';
import { VdbCollection, vdbRecordTable } from '../../tools/index.js';
import { KnowledgeBase, type ChunkingSettings } from '../entities/knowledge-base.entity.js';
import { chunkTable } from '../entities/knowledge-chunk.entity.js';
import { KnowledgeSource } from '../entities/knowledge-source.entity.js';
import { knowledgeErrors } from '../errors.js';
import { knowledgeConfigServiceIdentifier, type KnowledgeConfig } from '../knowledge.config.js';
import { BaseEmbedders } from './base-embedders.js';
import { isUuid } from '../../../kernel/crypto.js';

export interface BaseInput {
  name: string;
  description?: string | null;
  embeddingModelId?: string;
  embeddingDimension?: number;
  chunking?: Partial<ChunkingSettings>;
}

export interface SourceInput {
  kind: 'file' | 'url';
  name: string;
  mediaType: string;
  url?: string;
  data?: Uint8Array;
  metadata?: Record<string, unknown>;
}


/** The vector database collection of a base: `kb:` keeps it out of reach of `/tool/vdb` (names there are letters, digits, `_`). */
export const collectionNameOf = (baseId: string) => `kb:${baseId}`;

/**
 * Knowledge bases and their sources, per team: create, list, delete (with everything derived), and
 * queue sources for ingestion (the `IngestionService` does the work in the background).
 */
@injectable()
export class KnowledgeService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(vectorStoreServiceIdentifier) private readonly store: VectorStore,
    @inject(BaseEmbedders) private readonly embedders: BaseEmbedders,
    @inject(AiGatewayService) private readonly gateway: AiGatewayService,
    @inject(knowledgeConfigServiceIdentifier) private readonly config: KnowledgeConfig,
  ) {}

  async teamOf(em: EntityManager, userId: string): Promise<string> {
    const membership = await this.teams.firstTeam(em, userId);
    if (!membership) throw knowledgeErrors.noTeam();
    return membership.team.id;
  }

  chunkingOf(input: Partial<ChunkingSettings> | undefined): ChunkingSettings {
    const defaults = this.config.chunking;
    const settings = { chunkTokens: input?.chunkTokens ?? defaults.chunkTokens, overlapTokens: input?.overlapTokens ?? defaults.overlapTokens, parentTokens: input?.parentTokens ?? defaults.parentTokens };
    if (settings.overlapTokens >= settings.chunkTokens) throw knowledgeErrors.chunkingInvalid('chunking.overlapTokens must be smaller than chunking.chunkTokens.');
    if (settings.parentTokens !== 0 && settings.parentTokens < settings.chunkTokens) throw knowledgeErrors.chunkingInvalid('chunking.parentTokens is 0 (no parents) or at least chunking.chunkTokens.');
    return settings;
  }

  async createBase(em: EntityManager, userId: string, teamId: string, input: BaseInput): Promise<KnowledgeBase> {
    const chunking = this.chunkingOf(input.chunking);
    const modelId = input.embeddingModelId ?? null;
    if (modelId !== null) {
      if (input.embeddingDimension === undefined) throw knowledgeErrors.chunkingInvalid('embeddingDimension is required with embeddingModelId (the vector length the model answers).');
      // The caller must be allowed to use the model; the base then embeds with it for the whole team.
      await this.gateway.check(em, userId, modelId);
    }
    const embedder = this.embedders.resolve(modelId, input.embeddingDimension);
    const baseId = this.ids.next();
    return inTransaction(em, async (tx) => {
      const collection = tx.create(VdbCollection, { id: this.ids.next(), team: tx.getReference(Team, teamId), name: collectionNameOf(baseId), embedder: embedder.name, dimension: embedder.dimension } as VdbCollection);
      const base = tx.create(KnowledgeBase, {
        id: baseId,
        team: tx.getReference(Team, teamId),
        name: input.name,
        description: input.description ?? null,
        embeddingModelId: modelId,
        embedder: embedder.name,
        dimension: embedder.dimension,
        chunking,
        collection,
      } as KnowledgeBase);
      await tx.flush();
      return base;
    });
  }

  async listBases(em: EntityManager, teamId: string, page: { offset: number; size: number }): Promise<{ items: KnowledgeBase[]; total: number }> {
    const [items, total] = await em.findAndCount(KnowledgeBase, { team: teamId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async getBase(em: EntityManager, teamId: string, baseId: string): Promise<KnowledgeBase> {
    const base = isUuid(baseId) ? await em.findOne(KnowledgeBase, { id: baseId, team: teamId }) : null;
    if (!base) throw knowledgeErrors.baseNotFound();
    return base;
  }

  /** Counts of a base's sources by status, and of its chunks. */
  async statsOf(em: EntityManager, baseId: string): Promise<{ sources: number; ready: number; failed: number; chunks: number }> {
    const connection = em.getConnection();
    const rows = (await connection.execute(`SELECT status, COUNT(*) AS n FROM knowledge_sources WHERE base_id = ? GROUP BY status`, [baseId], 'all')) as Array<{ status: string; n: number | string }>;
    const [chunks] = (await connection.execute(`SELECT COUNT(*) AS n FROM ${chunkTable.table} WHERE base_id = ? AND role = 'child'`, [baseId], 'all')) as Array<{ n: number | string }>;
    const count = (status?: string) => rows.filter((row) => status === undefined || row.status === status).reduce((sum, row) => sum + Number(row.n), 0);
    return { sources: count(), ready: count('ready'), failed: count('failed'), chunks: Number(chunks?.n ?? 0) };
  }

  /** Deletes a base with its sources, chunks, keyword rows and vectors. */
  async deleteBase(em: EntityManager, teamId: string, baseId: string): Promise<void> {
    const base = await this.getBase(em, teamId, baseId);
    await inTransaction(em, async (tx) => {
      const ids = (await tx.getConnection().execute(`SELECT id FROM ${chunkTable.table} WHERE base_id = ? AND role = 'child'`, [base.id], 'all', tx.getTransactionContext())) as Array<{ id: string }>;
      if (ids.length) await this.store.remove(tx, base.collection.id, ids.map((row) => row.id));
      // The collection cascades to its records and to the base, the base to its sources, the sources to their chunks.
      await tx.nativeDelete(VdbCollection, { id: base.collection.id });
    });
  }

  async addSource(em: EntityManager, base: KnowledgeBase, input: SourceInput): Promise<KnowledgeSource> {
    const count = await em.count(KnowledgeSource, { base: base.id });
    if (count >= this.config.maxSourcesPerBase) throw knowledgeErrors.baseFull(this.config.maxSourcesPerBase);
    const source = em.create(KnowledgeSource, {
      id: this.ids.next(),
      base,
      kind: input.kind,
      name: input.name,
      mediaType: input.mediaType,
      url: input.url ?? null,
      sizeBytes: input.data?.length ?? 0,
      data: input.data ? Buffer.from(input.data) : null,
      metadata: input.metadata ?? {},
      status: 'queued',
      progress: { parsed: 0, chunks: 0, embedded: 0 },
      error: null,
      attempts: 0,
      leaseUntil: null,
      indexedAt: null,
    } as KnowledgeSource);
    await em.flush();
    return source;
  }

  async listSources(em: EntityManager, base: KnowledgeBase, page: { offset: number; size: number }, status?: string): Promise<{ items: KnowledgeSource[]; total: number }> {
    const where = status ? { base: base.id, status: status as KnowledgeSource['status'] } : { base: base.id };
    const [items, total] = await em.findAndCount(KnowledgeSource, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async getSource(em: EntityManager, base: KnowledgeBase, sourceId: string): Promise<KnowledgeSource> {
    const source = isUuid(sourceId) ? await em.findOne(KnowledgeSource, { id: sourceId, base: base.id }) : null;
    if (!source) throw knowledgeErrors.sourceNotFound();
    return source;
  }

  /** Deletes a source and everything derived from it: chunks, keyword rows (triggers or the generated column) and vectors. */
  async deleteSource(em: EntityManager, base: KnowledgeBase, sourceId: string): Promise<void> {
    const source = await this.getSource(em, base, sourceId);
    await inTransaction(em, async (tx) => {
      await removeSourceVectors(tx, this.store, base.collection.id, source.id);
      await tx.nativeDelete(KnowledgeSource, { id: source.id });
    });
  }

  /** Queues a source to be ingested again (its current chunks answer until the new ones replace them). */
  async reindex(em: EntityManager, base: KnowledgeBase, sourceId: string): Promise<KnowledgeSource> {
    const source = await this.getSource(em, base, sourceId);
    source.status = 'queued';
    source.error = null;
    source.attempts = 0;
    source.leaseUntil = null;
    source.progress = { parsed: 0, chunks: 0, embedded: 0 };
    await em.flush();
    return source;
  }
}

/** Removes the vectors of a source's chunks (records and the store's copy); run inside the caller's transaction. */
export async function removeSourceVectors(tx: EntityManager, store: VectorStore, collectionId: string, sourceId: string): Promise<void> {
  const connection = tx.getConnection();
  const context = tx.getTransactionContext();
  const rows = (await connection.execute(`SELECT id FROM ${chunkTable.table} WHERE source_id = ? AND role = 'child'`, [sourceId], 'all', context)) as Array<{ id: string }>;
  if (!rows.length) return;
  const ids = rows.map((row) => row.id);
  await store.remove(tx, collectionId, ids);
  for (let i = 0; i < ids.length; i += 500) {
    const slice = ids.slice(i, i + 500);
    await connection.execute(`DELETE FROM ${vdbRecordTable.table} WHERE ${vdbRecordTable.id} IN (${slice.map(() => '?').join(', ')})`, slice, 'run', context);
  }
}
