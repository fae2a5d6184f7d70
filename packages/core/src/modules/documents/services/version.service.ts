import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import { type Paging } from '../../../kernel/http/dto/paging.js';
import { serializeContent } from '../content/serialized-content.js';
import { applyBlockDelta } from '../content/version-delta.js';
import type { DocumentContent } from '../content/rich-text.js';
import { DocumentVersion, type VersionSource } from '../entities/document-version.entity.js';
import { versionChain } from './document-store.js';
import { authorOf, DocumentService } from './document.service.js';

export interface VersionFilter {
  source?: VersionSource;
  authorId?: string;
  from?: Date;
  to?: Date;
}

const damagedHistory = (versionId: string, cause?: unknown) => new TrellisError('internal', 'internal_error', `The stored history of version ${versionId} does not rebuild its content.`, { cause });

const versionNotFound = () => new TrellisError('not_found', 'version_not_found', 'The document has no version with this id.');

/** The version history of documents: every successful write leaves one. */
@injectable()
export class VersionService {
  constructor(@inject(DocumentService) private readonly documents: DocumentService) {}

  async list(em: EntityManager, principal: Principal, documentId: string, filter: VersionFilter, page: Paging): Promise<{ items: DocumentVersion[]; total: number }> {
    await this.documents.requireDocument(em, documentId, principal, 'read');
    const where: FilterQuery<DocumentVersion> = { document: documentId };
    if (filter.source) where.source = filter.source;
    if (filter.authorId) where.author = filter.authorId;
    if (filter.from || filter.to) where.createdAt = { ...(filter.from ? { $gte: filter.from } : {}), ...(filter.to ? { $lte: filter.to } : {}) };
    const [items, total] = await em.findAndCount(DocumentVersion, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
      populate: ['author'],
      exclude: ['content'],
    } as never);
    return { items, total };
  }

  /** One version with its content (a delta version's content is rebuilt from its snapshot). */
  async get(em: EntityManager, principal: Principal, documentId: string, versionId: string): Promise<DocumentVersion & { content: DocumentContent }> {
    await this.documents.requireDocument(em, documentId, principal, 'read');
    const version = await em.findOne(DocumentVersion, { id: versionId, document: documentId }, { populate: ['author'] });
    if (!version) throw versionNotFound();
    return Object.assign(version, { content: await this.contentOf(em, version) });
  }

  /**
   * The exact content of a version: its snapshot, or the snapshot it descends from with the deltas
   * on the way applied in order. The result must have the version's hash; anything else is a
   * damaged history and answers 500 rather than wrong content.
   */
  async contentOf(em: EntityManager, version: DocumentVersion): Promise<DocumentContent> {
    if (version.delta === null && version.content !== null) return version.content;
    const chain = await versionChain(this.documents.sql, em, version.id, version.chainLength + 1);
    const [snapshot, ...deltas] = chain;
    if (!snapshot || snapshot.delta !== null || chain[chain.length - 1]!.id !== version.id) throw damagedHistory(version.id);
    let content = snapshot.content as DocumentContent;
    try {
      for (const link of deltas) content = applyBlockDelta(content, link.delta!);
    } catch (error) {
      throw damagedHistory(version.id, error);
    }
    if (serializeContent(content).hash !== version.contentHash) throw damagedHistory(version.id);
    return content;
  }

  /** Makes a version's content current again; the rollback itself is a new version. */
  async rollback(em: EntityManager, principal: Principal, documentId: string, versionId: string): Promise<{ version: string; versionId: string }> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'write');
    const target = await em.findOne(DocumentVersion, { id: versionId, document: documentId });
    if (!target) throw versionNotFound();
    const version = await this.documents.write(em, doc, await this.contentOf(em, target), { author: authorOf(principal), source: 'rollback', forceVersion: true });
    const latest = await em.fork().findOne(DocumentVersion, { document: documentId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
    return { version, versionId: latest?.id ?? versionId };
  }
}
