export { documentsModule } from './documents.module.js';
export { documentsConfigSchema, type DocumentsConfig } from './documents.config.js';
export { Document, DocumentSchema } from './entities/document.entity.js';
export { DocumentVersion, DocumentVersionSchema, versionSources, type VersionSource } from './entities/document-version.entity.js';
export { DocumentUiState, DocumentUiStateSchema } from './entities/document-ui-state.entity.js';
export { DocumentService, authorOf, copyLabel, type CommitOptions, type ContentFormat, type EditOutcome, type EditRequest } from './services/document.service.js';
export { VersionService, type VersionFilter } from './services/version.service.js';
export { UiStateService, type UiStateFields } from './services/ui-state.service.js';
export { collaborationGateServiceIdentifier, type Author, type CollaborationGate } from './collaboration-gate.js';
export { combinedAuth, documentValidation } from './routes.js';
export { toDocumentView, toVersionView } from './views.js';
export { contentHash, contentBytes } from './content/content-hash.js';
export { canonicalJson } from './content/canonical-json.js';
export { fnv1a32, fnv1a32Hex } from './content/fnv1a.js';
export { fromMarkdownIr, toMarkdownIr, MarkdownIrError } from './content/markdown-ir.js';
export { hasComments, stripComments, isInlineContent } from './content/comments.js';
export { applyCommands, CommandError, commandOps, type CommandOp, type CommandResult } from './content/edit-commands.js';
export {
  ContentError,
  ensureBlockIds,
  normalizeDocument,
  normalizeNodes,
  prepareDocument,
  emptyDocument,
  blockId,
  blockName,
  type DocumentContent,
  type JsonObject,
  type JsonValue,
  type RichMark,
  type RichNode, NODE_MARKS_ATTRIBUTE, TYPE_NAME,
} from './content/rich-text.js';
export * as documentErrors from './errors.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { richDocument } from './content/arbitraries.js';
export type { SerializedContent } from './content/serialized-content.js';
export { DocumentParams, SmartEditBody } from './dto/document.dto.js';
export { documentNotFound } from './errors.js';
