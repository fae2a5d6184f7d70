import { EntitySchema } from '@mikro-orm/core';
import { Document } from '../../documents/index.js';

/**
 * The collaborative lease one host process holds on a document while it has a session open:
 * renewed every third of `collab.leaseMs`, deleted when the session closes. The document's own
 * `collabLeaseUntil` is the latest of its rows, so the document stays in `collab` mode while any
 * process still holds a session, whichever process leaves first.
 */
export class DocumentCollabLease {
  document!: Document;
  /** The process (its collab instance id). */
  instanceId!: string;
  until!: Date;
}

export const DocumentCollabLeaseSchema = new EntitySchema<DocumentCollabLease>({
  class: DocumentCollabLease,
  tableName: 'document_collab_leases',
  properties: {
    document: { kind: 'm:1', entity: () => Document, primary: true, deleteRule: 'cascade' },
    instanceId: { type: 'string', length: 64, primary: true },
    until: { type: 'datetime' },
  },
});
