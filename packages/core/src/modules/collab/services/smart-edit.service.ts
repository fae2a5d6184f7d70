import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import { type CommandResult, DocumentService, type EditRequest } from '../../documents/index.js';
import { CollabService } from './collab.service.js';

export interface SmartEditOutcome {
  mode: 'rest' | 'collab';
  version: string;
  results: CommandResult[];
}

/** How long a smart-edit without base_version keeps retrying on version conflicts. */
export const smartEditRetryMs = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const isCode = (error: unknown, code: string) => error instanceof TrellisError && error.code === code;

/**
 * `POST /documents/:id/smart-edit`: edits by whichever road is open. A document in collab mode
 * is edited through the collaborative channel (a Yjs transaction connected editors receive live).
 * Otherwise the REST edit is tried; a 423 switches to the collaborative channel; a 409 when the
 * caller gave no base_version is retried on the current version (checking content_source again)
 * until the edit lands or `smartEditRetryMs` passes: never a 409 the caller did not ask for.
 */
@injectable()
export class SmartEditService {
  /** The retry bound (`smartEditRetryMs`); tests shorten it. */
  retryForMs = smartEditRetryMs;

  constructor(
    @inject(DocumentService) private readonly documents: DocumentService,
    @inject(CollabService) private readonly collab: CollabService,
  ) {}

  async edit(em: EntityManager, principal: Principal, documentId: string, request: EditRequest & { base_version?: string }): Promise<SmartEditOutcome> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'write');
    const viaCollab = async (): Promise<SmartEditOutcome> => ({ mode: 'collab', ...(await this.collab.edit(documentId, request, principal, 'smart_edit')) });
    if (this.documents.contentSource(doc) === 'collab' || this.collab.isLive(documentId)) return viaCollab();
    let base = request.base_version ?? doc.contentHash;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const outcome = await this.documents.edit(em.fork(), principal, documentId, { ...request, base_version: base }, 'smart_edit');
        return { mode: 'rest', ...outcome };
      } catch (error) {
        if (isCode(error, 'document_locked')) return viaCollab();
        // Without a caller base_version a conflict is never the caller's: retry on the current
        // version until the edit lands or the time bound passes (then 503 busy, never 409).
        if (isCode(error, 'version_conflict') && request.base_version === undefined) {
          if (Date.now() - started >= this.retryForMs) {
            throw new TrellisError('unavailable', 'busy', 'The document kept changing; the edit did not land. Retry the request.', { headers: { 'retry-after': '1' }, expose: true });
          }
          // Back off a little (growing, with jitter) so parallel edits stop colliding.
          await sleep(Math.min(100, 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
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
