import type { DocumentVersion } from './entities/document-version.entity.js';
import type { Document } from './entities/document.entity.js';
import type { UiStateFields } from './services/ui-state.service.js';

/** A document resource (snake_case, as the spec shows documents). */
export const toDocumentView = (doc: Document, contentSource: string) => ({
  id: doc.id,
  project_id: doc.project.id,
  title: doc.title,
  doc_type: doc.docType,
  content: doc.content,
  content_hash: doc.contentHash,
  content_source: contentSource,
  created_at: doc.createdAt.toISOString(),
  updated_at: doc.updatedAt.toISOString(),
});

export const toVersionView = (version: DocumentVersion, withContent: boolean) => ({
  id: version.id,
  document_id: version.document.id,
  version: version.contentHash,
  title: version.title,
  source: version.source,
  author: version.author ? { id: version.author.id, name: version.author.name ?? null } : null,
  author_kind: version.authorKind,
  created_at: version.createdAt.toISOString(),
  ...(withContent ? { content: version.content } : {}),
});

export const toUiStateView = (documentId: string, state: UiStateFields & { updatedAt: Date | null }) => ({
  document_id: documentId,
  annotations: state.annotations,
  pending_changes: state.pendingChanges,
  preview_state: state.previewState,
  thumbnail: state.thumbnail,
  updated_at: state.updatedAt?.toISOString() ?? null,
});
