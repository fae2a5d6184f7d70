import { EntitySchema } from '@mikro-orm/core';
import type { JsonObject, JsonValue } from '../content/rich-text.js';
import { Document } from './document.entity.js';

/**
 * The UI preview state of a document: annotations, changes awaiting the user's confirmation,
 * preview state (screen, viewport, render state) and thumbnail. `revision` guards concurrent
 * updates (compare-and-swap).
 */
export class DocumentUiState {
  document!: Document;
  annotations!: JsonValue[];
  pendingChanges!: JsonObject | null;
  previewState!: JsonObject;
  thumbnail!: JsonObject;
  revision!: number;
  updatedAt!: Date;
}

export const DocumentUiStateSchema = new EntitySchema<DocumentUiState>({
  class: DocumentUiState,
  tableName: 'document_ui_states',
  properties: {
    document: { kind: '1:1', entity: () => Document, primary: true, owner: true, deleteRule: 'cascade' },
    annotations: { type: 'json' },
    pendingChanges: { type: 'json', nullable: true },
    previewState: { type: 'json' },
    thumbnail: { type: 'json' },
    revision: { type: 'integer', default: 0 },
    updatedAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
