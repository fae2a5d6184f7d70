import type { EntityManager } from '@mikro-orm/core';
import { injectable } from 'inversify';
import { inTransaction } from '../../../kernel/transaction.js';
import { Document, documentNotFound } from '../../documents/index.js';
import { DocumentCollabLease } from '../entities/document-collab-lease.entity.js';

/**
 * The per-process collaborative leases of a document, and the document's `collabLeaseUntil` kept
 * as the latest of them. Each change runs in one transaction that first writes the document row
 * (its row lock on PostgreSQL, the write lock on SQLite), so concurrent renewals and releases by
 * several processes are applied one after the other and the latest lease always survives.
 */
@injectable()
export class CollabLeaseStore {
  /** Holds (or extends) `instanceId`'s lease until `until`; 404 when the document is gone. */
  async renew(em: EntityManager, documentId: string, instanceId: string, until: Date, now: Date): Promise<void> {
    await inTransaction(em.fork(), async (tx) => {
      if ((await tx.nativeUpdate(Document, { id: documentId, deletedAt: null }, { collabLeaseUntil: until })) === 0) throw documentNotFound();
      await tx.nativeDelete(DocumentCollabLease, { document: documentId, until: { $lte: now } });
      await tx.upsert(DocumentCollabLease, { document: tx.getReference(Document, documentId), instanceId, until } as never);
      await this.summarize(tx, documentId, now);
    });
  }

  /** Drops `instanceId`'s lease: the document stays held until the latest lease of another process. */
  async release(em: EntityManager, documentId: string, instanceId: string, now: Date): Promise<void> {
    await inTransaction(em.fork(), async (tx) => {
      if ((await tx.nativeUpdate(Document, { id: documentId }, { collabLeaseUntil: null })) === 0) return;
      await tx.nativeDelete(DocumentCollabLease, { document: documentId, $or: [{ instanceId }, { until: { $lte: now } }] });
      await this.summarize(tx, documentId, now);
    });
  }

  private async summarize(tx: EntityManager, documentId: string, now: Date): Promise<void> {
    const latest = await tx.findOne(DocumentCollabLease, { document: documentId, until: { $gt: now } }, { orderBy: { until: 'desc' }, fields: ['until'] as never, disableIdentityMap: true });
    await tx.nativeUpdate(Document, { id: documentId, deletedAt: null }, { collabLeaseUntil: latest?.until ?? null });
  }
}
