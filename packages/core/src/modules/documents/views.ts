import type { DocumentContent } from './content/rich-text.js';
import type { DocumentVersion } from './entities/document-version.entity.js';
import type { Document } from './entities/document.entity.js';
import type { DocumentView, UiStateView, VersionView } from './schemas.js';
import type { UiStateFields } from './services/ui-state.service.js';

export const toDocumentView = (doc: Document, contentSource: DocumentView['content_source']): DocumentView => ({
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

/** A version; with `content` (read through `VersionService`: a delta version stores none) for one version's detail. */
export const toVersionView = (version: DocumentVersion, content?: DocumentContent): VersionView => ({
  id: version.id,
  document_id: version.document.id,
  version: version.contentHash,
  title: version.title,
  source: version.source,
  author: version.author ? { id: version.author.id, name: version.author.name } : null,
  author_kind: version.authorKind,
  created_at: version.createdAt.toISOString(),
  ...(content ? { content } : {}),
});

/**
 * The stored UI state is JSON that the ui-* routes' bodies validated before storing it (objects in
 * `annotations`, the fields of `pending_changes`, `preview_state` and `thumbnail`): it is read back
 * as the shapes those bodies admit.
 */
export const toUiStateView = (documentId: string, state: UiStateFields & { updatedAt: Date | null }): UiStateView => ({
  document_id: documentId,
  annotations: state.annotations as UiStateView['annotations'],
  pending_changes: state.pendingChanges as UiStateView['pending_changes'],
  preview_state: state.previewState as UiStateView['preview_state'],
  thumbnail: state.thumbnail as UiStateView['thumbnail'],
  updated_at: state.updatedAt?.toISOString() ?? null,
});
