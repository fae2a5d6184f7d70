import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import type { DocumentContent } from '../content/rich-text.js';
import { Document } from './document.entity.js';

/** Where a version came from. */
export const versionSources = ['create', 'edit', 'smart_edit', 'update', 'collab', 'collab_edit', 'rollback', 'ui_save', 'duplicate', 'yjs_state'] as const;
export type VersionSource = (typeof versionSources)[number];

/**
 * The content of a document after every successful write, with who wrote it and how. A version
 * is a snapshot (`content`) or a change of top-level blocks against the version before it
 * (`delta` on `baseId`, `content` JSON null): `VersionService` reads either back exactly.
 */
export class DocumentVersion {
  id!: string;
  document!: Document;
  contentHash!: string;
  /** The whole content of a snapshot; `null` for a delta (read it through `VersionService`). */
  content!: DocumentContent | null;
  /** The version a delta applies to. */
  baseId!: string | null;
  /** A block delta (content/version-delta.ts) against `baseId`. */
  delta!: string | null;
  /** Deltas between this version and its snapshot (0 for a snapshot). */
  chainLength!: number;
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
    // `json` on PostgreSQL (not `jsonb`): the canonical text is stored as written, with no binary conversion per write.
    content: { type: 'json', columnType: 'json' },
    baseId: { type: 'uuid', nullable: true },
    delta: { type: 'text', nullable: true },
    chainLength: { type: 'integer', default: 0 },
    title: { type: 'string', length: 500, nullable: true },
    source: { type: 'string', length: 32 },
    author: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    authorKind: { type: 'string', length: 16, nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
