import type { EntityManager } from '@mikro-orm/core';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { DocumentUiState } from '../entities/document-ui-state.entity.js';
import { Document } from '../entities/document.entity.js';

export type UiStateFields = Pick<DocumentUiState, 'annotations' | 'pendingChanges' | 'previewState' | 'thumbnail'>;

const blank = (): UiStateFields => ({ annotations: [], pendingChanges: null, previewState: {}, thumbnail: {} });

/**
 * The UI preview state of documents. Every change is a read-modify-write guarded by the row's
 * revision (compare-and-swap), retried on a concurrent change, so parallel updates of different
 * fields never undo each other.
 */
@injectable()
export class UiStateService {
  constructor(@inject(clockServiceIdentifier) private readonly clock: Clock) {}

  async get(em: EntityManager, documentId: string): Promise<UiStateFields & { updatedAt: Date | null }> {
    const row = await em.fork().findOne(DocumentUiState, { document: documentId });
    return row ? { ...pick(row), updatedAt: row.updatedAt } : { ...blank(), updatedAt: null };
  }

  async mutate(em: EntityManager, documentId: string, change: (state: UiStateFields) => UiStateFields): Promise<UiStateFields & { updatedAt: Date }> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const fork = em.fork();
      const row = await fork.findOne(DocumentUiState, { document: documentId });
      const now = this.clock.now();
      const next = change(row ? pick(row) : blank());
      if (!row) {
        try {
          await fork.insert(DocumentUiState, { document: fork.getReference(Document, documentId), ...next, revision: 1, updatedAt: now } as never);
          return { ...next, updatedAt: now };
        } catch (error) {
          if (error instanceof UniqueConstraintViolationException) continue;
          throw error;
        }
      }
      const count = await fork.nativeUpdate(DocumentUiState, { document: documentId, revision: row.revision }, { ...next, revision: row.revision + 1, updatedAt: now });
      if (count === 1) return { ...next, updatedAt: now };
    }
    throw new TrellisError('conflict', 'ui_state_busy', 'The UI state kept changing under this update; retry.');
  }
}

function pick(row: DocumentUiState): UiStateFields {
  return { annotations: row.annotations, pendingChanges: row.pendingChanges, previewState: row.previewState, thumbnail: row.thumbnail };
}
