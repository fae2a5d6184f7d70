import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import * as Y from 'yjs';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { Document } from '../../documents/index.js';
import { DocumentYjsState } from '../entities/document-yjs-state.entity.js';

export const encodeState = (state: Uint8Array): string => Buffer.from(state).toString('base64');
export const decodeState = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

/** Reads and writes persisted Yjs states, with compare-and-swap on the row's revision. */
@injectable()
export class YjsStateStore {
  constructor(@inject(clockServiceIdentifier) private readonly clock: Clock) {}

  load(em: EntityManager, documentId: string): Promise<DocumentYjsState | null> {
    return em.fork().findOne(DocumentYjsState, { document: documentId });
  }

  /**
   * Replaces the state if the row is still as `expected` was read (or still absent). Answers
   * false when another writer got there first.
   */
  async replace(em: EntityManager, documentId: string, expected: DocumentYjsState | null, state: Uint8Array, contentHash: string): Promise<boolean> {
    const now = this.clock.now();
    const fork = em.fork();
    if (!expected) {
      try {
        await fork.insert(DocumentYjsState, { document: fork.getReference(Document, documentId), state: encodeState(state), contentHash, revision: 1, updatedAt: now } as never);
        return true;
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) return false;
        throw error;
      }
    }
    const count = await fork.nativeUpdate(DocumentYjsState, { document: documentId, revision: expected.revision }, { state: encodeState(state), contentHash, revision: expected.revision + 1, updatedAt: now });
    return count === 1;
  }

  /** Merges `state` into the stored one (Yjs updates merge without loss), retrying on concurrent writers. */
  async merge(em: EntityManager, documentId: string, state: Uint8Array, contentHash: string): Promise<void> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const row = await this.load(em, documentId);
      const merged = row ? Y.mergeUpdates([decodeState(row.state), state]) : state;
      if (await this.replace(em, documentId, row, merged, contentHash)) return;
    }
    throw new Error(`could not persist the Yjs state of document ${documentId}: too many concurrent writers`);
  }
}
