import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/entities/user.entity.js';
import type { DocumentContent } from '../content/rich-text.js';
import { Document } from './document.entity.js';

/** Where a version came from. */
export const versionSources = ['create', 'edit', 'smart_edit', 'update', 'collab', 'collab_edit', 'rollback', 'ui_save', 'duplicate', 'yjs_state'] as const;
export type VersionSource = (typeof versionSources)[number];

/** A snapshot of a document taken at every successful write, with who wrote it and how. */
export class DocumentVersion {
  id!: string;
  document!: Document;
  contentHash!: string;
  content!: DocumentContent;
  title!: string | null;
  source!: VersionSource;
  author!: User | null;
  /** The credential kind the author used (`jwt`, `api_key`, `agent_token`). */
  authorKind!: string | null;
  createdAt!: Date;
}

export const DocumentVersionSchema = new EntitySchema<DocumentVersion>({
  class: DocumentVersion,
  tableName: 'document_versions',
  indexes: [{ properties: ['document', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    document: { kind: 'm:1', entity: () => Document, deleteRule: 'cascade' },
    contentHash: { type: 'string', length: 8 },
    content: { type: 'json' },
    title: { type: 'string', length: 500, nullable: true },
    source: { type: 'string', length: 32 },
    author: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    authorKind: { type: 'string', length: 16, nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
