import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { CommandResult } from '../../documents/content/edit-commands.js';
import { DocumentService, type EditRequest } from '../../documents/services/document.service.js';
import { CollabService } from './collab.service.js';

export interface SmartEditOutcome {
  mode: 'rest' | 'collab';
  version: string;
  results: CommandResult[];
}

const isCode = (error: unknown, code: string) => error instanceof TrellisError && error.code === code;

/**
 * `POST /documents/:id/smart-edit`: edits by whichever road is open. A document in collab mode
 * is edited through the collaborative channel (a Yjs transaction connected editors receive live).
 * Otherwise the REST edit is tried; a 423 switches to the collaborative channel; a 409 when the
 * caller gave no base_version is retried once, after checking content_source again.
 */
@injectable()
export class SmartEditService {
  constructor(
    @inject(DocumentService) private readonly documents: DocumentService,
    @inject(CollabService) private readonly collab: CollabService,
  ) {}

  async edit(em: EntityManager, principal: Principal, documentId: string, request: EditRequest & { base_version?: string }): Promise<SmartEditOutcome> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'write');
    const viaCollab = async (): Promise<SmartEditOutcome> => ({ mode: 'collab', ...(await this.collab.edit(documentId, request, principal, 'smart_edit')) });
    if (this.documents.contentSource(doc) === 'collab' || this.collab.isLive(documentId)) return viaCollab();
    let base = request.base_version ?? doc.contentHash;
    for (let attempt = 0; ; attempt++) {
      try {
        const outcome = await this.documents.edit(em.fork(), principal, documentId, { ...request, base_version: base }, 'smart_edit');
        return { mode: 'rest', ...outcome };
      } catch (error) {
        if (isCode(error, 'document_locked')) return viaCollab();
        if (isCode(error, 'version_conflict') && request.base_version === undefined && attempt === 0) {
          const { doc: fresh } = await this.documents.requireDocument(em.fork(), documentId, principal, 'write');
          if (this.documents.contentSource(fresh) === 'collab' || this.collab.isLive(documentId)) return viaCollab();
          base = fresh.contentHash;
          continue;
        }
        throw error;
      }
    }
  }
}
