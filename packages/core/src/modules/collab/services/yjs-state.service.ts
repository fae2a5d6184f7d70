import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import * as Y from 'yjs';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import { authorOf, DocumentService } from '../../documents/index.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { ensureElementIds, FRAGMENT_NAME, readDocument } from '../yjs/rich-text-yjs.js';
import { CollabService } from './collab.service.js';
import { YjsStateStore } from './yjs-state.store.js';

const invalidState = (why: string) => new TrellisError('bad_request', 'invalid_yjs_state', `The state is not a usable Yjs update: ${why}.`);

/** `GET` and `PUT /documents/:id/yjs-state`: the stored collaboration state. */
@injectable()
export class YjsStateService {
  constructor(
    @inject(DocumentService) private readonly documents: DocumentService,
    @inject(CollabService) private readonly collab: CollabService,
    @inject(YjsStateStore) private readonly states: YjsStateStore,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
  ) {}

  /** The live state in this process, else the stored one when it still matches the content; null means no cache. */
  async read(em: EntityManager, principal: Principal, documentId: string): Promise<number[] | null> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'read');
    const state = await this.collab.currentState(documentId, this.documents.leaseActive(doc) ? null : doc.contentHash);
    return state ? Array.from(state) : null;
  }

  /**
   * Stores a client's Yjs state. While a collaborative session holds the document the state is
   * applied to the live Yjs document as an update (editors receive what they lack); otherwise it
   * replaces the stored state and the JSON content is mirrored from it (a version, source
   * `yjs_state`).
   */
  async write(em: EntityManager, principal: Principal, documentId: string, bytes: number[]): Promise<void> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'write');
    const state = Uint8Array.from(bytes);
    const scratch = new Y.Doc();
    try {
      try {
        Y.applyUpdate(scratch, state);
      } catch (error) {
        throw invalidState((error as Error).message || 'it cannot be decoded');
      }
      // An update without a single Yjs item (`[0,0]` and the like) holds no document: it would wipe
      // the content if taken as the state.
      if (scratch.store.clients.size === 0) throw invalidState('it is empty (it holds no Yjs items)');
      const author = authorOf(principal);
      if (this.collab.isLive(documentId) || this.documents.leaseActive(doc)) {
        await this.collab.applyState(documentId, state, author);
        return;
      }
      const fragment = scratch.getXmlFragment(FRAGMENT_NAME);
      scratch.transact(() => ensureElementIds(fragment, () => this.ids.next()));
      const content = readDocument(fragment);
      if (!content) throw invalidState(`its "${FRAGMENT_NAME}" fragment does not hold rich-text content`);
      const serialized = this.documents.serialize(content);
      const hash = serialized.hash;
      try {
        if (hash !== doc.contentHash) await this.documents.commit(em, doc, content, { author, source: 'yjs_state', expectedHash: doc.contentHash, requireUnlocked: true, serialized });
      } catch (error) {
        if (error instanceof TrellisError && error.code === 'document_locked') {
          await this.collab.applyState(documentId, state, author);
          return;
        }
        throw error;
      }
      const encoded = Y.encodeStateAsUpdate(scratch);
      for (let attempt = 0; attempt < 5; attempt++) {
        const row = await this.states.load(em, documentId);
        if (await this.states.replace(em, documentId, row, encoded, hash)) return;
      }
      throw new TrellisError('conflict', 'yjs_state_busy', 'The stored state kept changing under this write; retry.');
    } finally {
      scratch.destroy();
    }
  }
}
