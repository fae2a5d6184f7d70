import type { EntityManager } from '@mikro-orm/core';
import type { Ids } from '../../../ports/ids.js';
import type { VectorStore } from '../../../ports/vector-store.js';
import { VdbRecord, vectorToBytes } from '../../tools/index.js';
import type { KnowledgeBase } from '../entities/knowledge-base.entity.js';
import { KnowledgeChunk } from '../entities/knowledge-chunk.entity.js';
import type { KnowledgeSource } from '../entities/knowledge-source.entity.js';
import type { DraftChunk } from '../ingest/chunker.js';
import { removeSourceVectors } from './knowledge.service.js';

/** The fields of a source every chunk's vector record carries, so filters can look at them. */
export const recordMetadataOf = (source: KnowledgeSource) => ({ ...source.metadata, sourceId: source.id, sourceName: source.name, mediaType: source.mediaType });

/**
 * Replaces a source's chunks, keyword rows and vectors with new ones, inside the caller's
 * transaction: the old ones go (vectors first, then the chunks, whose triggers or generated column
 * take the keyword rows along), then the chunks and one vector record per child chunk are inserted.
 */
export async function replaceSourceChunks(
  tx: EntityManager,
  deps: { ids: Ids; store: VectorStore },
  base: KnowledgeBase,
  source: KnowledgeSource,
  drafts: readonly DraftChunk[],
  vectors: readonly Float32Array[],
): Promise<void> {
  await removeSourceVectors(tx, deps.store, base.collection.id, source.id);
  await tx.nativeDelete(KnowledgeChunk, { source: source.id });
  const parentIds: string[] = [];
  const rows = drafts.map((draft, position) => {
    const id = deps.ids.next();
    if (draft.role === 'parent') parentIds.push(id);
    return {
      id,
      baseId: base.id,
      source: source.id,
      parentId: draft.parent === null ? null : parentIds[draft.parent]!,
      role: draft.role,
      position,
      text: draft.text,
      headingPath: draft.headingPath,
      page: draft.page,
      startOffset: draft.start,
      endOffset: draft.end,
      tokens: draft.tokens,
    };
  });
  const children = rows.filter((row) => row.role === 'child');
  const now = new Date();
  const metadata = recordMetadataOf(source);
  for (let i = 0; i < rows.length; i += 200) await tx.insertMany(KnowledgeChunk, rows.slice(i, i + 200) as never[]);
  const records = children.map((row, index) => ({
    id: row.id,
    collection: base.collection.id,
    content: row.text,
    tags: [],
    metadata,
    embedding: vectorToBytes(vectors[index]!),
    dimension: base.dimension,
    createdAt: now,
    updatedAt: now,
  }));
  for (let i = 0; i < records.length; i += 200) await tx.insertMany(VdbRecord, records.slice(i, i + 200) as never[]);
  await deps.store.upsert(
    tx,
    children.map((row, index) => ({ id: row.id, collectionId: base.collection.id, vector: vectors[index]!, tags: [], metadata })),
  );
}
