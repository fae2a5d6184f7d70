import { TrellisError } from '../../kernel/errors.js';
import type { Document } from './entities/document.entity.js';

export const documentNotFound = () => new TrellisError('not_found', 'document_not_found', 'No such document, or you have no access to it.');

export const writePermissionRequired = () =>
  new TrellisError('forbidden', 'write_permission_required', 'You may read this document but not change it: writing needs the write permission in its project.');

export const versionConflict = (current: Document) =>
  new TrellisError('conflict', 'version_conflict', 'The document changed since base_version: merge your change into current_content and retry with current_version.', {
    extra: { current_version: current.contentHash, current_content: current.content },
  });

export const documentLocked = (activeConnections: number) =>
  new TrellisError('locked', 'document_locked', 'The document is being edited collaboratively; edit it through the collaborative channel (smart-edit does this for you).', {
    extra: { active_connections: activeConnections, scope: 'local' },
  });

export const commentPreservationRequired = () =>
  new TrellisError(
    'conflict',
    'comment_preservation_required',
    'The document has // comment lines that an agent cannot see; replacing the whole content would drop them. Use commands mode instead.',
  );

export const contentTooLarge = (bytes: number, limit: number) =>
  new TrellisError('payload_too_large', 'content_too_large', `The content is ${bytes} bytes; the limit is ${limit} bytes (documents.maxContentBytes).`);
