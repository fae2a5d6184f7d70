import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { Project } from '../../projects/index.js';
import type { DocumentContent } from '../content/rich-text.js';

/**
 * A rich-text document of a project. `content` is kept in normal form and `contentHash` is its
 * FNV-1a hash (the version). While a collaborative session holds the document, `collabLeaseUntil`
 * lies in the future: the document is in `collab` mode and REST edits answer 423.
 */
export class Document {
  id!: string;
  project!: Project;
  title!: string | null;
  docType!: string;
  content!: DocumentContent;
  contentHash!: string;
  /**
   * The version whose content is the current content: the base of the next version's delta.
   * `null` (rows from before versions had deltas) makes the next version a snapshot.
   */
  headVersionId!: string | null;
  createdBy!: User | null;
  collabLeaseUntil!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
  deletedAt!: Date | null;
}

export const DocumentSchema = new EntitySchema<Document>({
  class: Document,
  tableName: 'documents',
  properties: {
    id: { type: 'uuid', primary: true },
    project: { kind: 'm:1', entity: () => Project, deleteRule: 'cascade', index: true },
    title: { type: 'string', length: 500, nullable: true },
    docType: { type: 'string', length: 64, default: 'document' },
    // `json` on PostgreSQL (not `jsonb`): the canonical text is stored as written, with no binary conversion per write.
    content: { type: 'json', columnType: 'json' },
    contentHash: { type: 'string', length: 8 },
    headVersionId: { type: 'uuid', nullable: true },
    createdBy: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    collabLeaseUntil: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date() },
    deletedAt: { type: 'datetime', nullable: true },
  },
});
