import { EntitySchema } from '@mikro-orm/core';
import { Document } from '../../documents/index.js';

/**
 * The persisted Yjs state of a document (`yjs-state`): a full Yjs update, base64 encoded, and the
 * content hash of the JSON it represented when written. A state whose hash differs from the
 * document's current hash is stale (the content was changed outside collaboration) and is not used.
 */
export class DocumentYjsState {
  document!: Document;
  state!: string;
  contentHash!: string;
  revision!: number;
  updatedAt!: Date;
}

export const DocumentYjsStateSchema = new EntitySchema<DocumentYjsState>({
  class: DocumentYjsState,
  tableName: 'document_yjs_states',
  properties: {
    document: { kind: '1:1', entity: () => Document, primary: true, owner: true, deleteRule: 'cascade' },
    state: { type: 'text' },
    contentHash: { type: 'string', length: 8 },
    revision: { type: 'integer', default: 0 },
    updatedAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
