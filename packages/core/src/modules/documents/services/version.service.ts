import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import { type Paging } from '../../../kernel/http/dto/paging.js';
import { DocumentVersion, type VersionSource } from '../entities/document-version.entity.js';
import { authorOf, DocumentService } from './document.service.js';

export interface VersionFilter {
  source?: VersionSource;
  authorId?: string;
  from?: Date;
  to?: Date;
}

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

  async get(em: EntityManager, principal: Principal, documentId: string, versionId: string): Promise<DocumentVersion> {
    await this.documents.requireDocument(em, documentId, principal, 'read');
    const version = await em.findOne(DocumentVersion, { id: versionId, document: documentId }, { populate: ['author'] });
    if (!version) throw versionNotFound();
    return version;
  }

  /** Makes a version's content current again; the rollback itself is a new version. */
  async rollback(em: EntityManager, principal: Principal, documentId: string, versionId: string): Promise<{ version: string; versionId: string }> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'write');
    const target = await em.findOne(DocumentVersion, { id: versionId, document: documentId });
    if (!target) throw versionNotFound();
    const version = await this.documents.write(em, doc, target.content, { author: authorOf(principal), source: 'rollback', forceVersion: true });
    const latest = await em.fork().findOne(DocumentVersion, { document: documentId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
    return { version, versionId: latest?.id ?? versionId };
  }
}
