import type { ServiceIdentifier } from 'inversify';
import type { DocumentContent } from './content/rich-text.js';
import type { VersionSource } from './entities/document-version.entity.js';

/** Who made a change: the user and the kind of credential used (null for the system). */
export interface Author {
  userId: string | null;
  kind: string | null;
}

/**
 * What the documents module needs from collaborative editing, without depending on it. The collab
 * module binds it; without it every document is in single-user (`rest`) mode.
 */
export interface CollaborationGate {
  /** Collaborative connections (WebSocket clients and REST participants) to the document held by this process. */
  localConnections(documentId: string): number;
  /** Of those, the ones that may write (read-only viewers left out): they lock REST edits out (423). */
  localEditors(documentId: string): number;
  /**
   * Whether this process has a session of the document at all: loading, open, or closing (its
   * last mirror and the release of its lease still under way). Such a process reports `collab`.
   */
  holdsSession?(documentId: string): boolean;
  /** Whether this process holds the document's live Yjs document. */
  isLive(documentId: string): boolean;
  /** Writes collaborative changes not yet mirrored to the stored content, now. */
  flush(documentId: string): Promise<void>;
  /** Makes `content` the document's content through the Yjs document (connected editors receive it); answers the new content hash. */
  applyContent(documentId: string, content: DocumentContent, author: Author, source: VersionSource): Promise<string>;
  /** The document is gone: disconnect its collaborators and forget its session. */
  closeDocument(documentId: string): Promise<void>;
}

export const collaborationGateServiceIdentifier: ServiceIdentifier<CollaborationGate> = Symbol.for('@trellis/core/documents/CollaborationGate');
