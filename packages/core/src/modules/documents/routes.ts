import { TrellisError } from '../../kernel/errors.js';
import { paging, pageOf } from '../../kernel/http/dto/paging.js';
import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import type { ModuleContext } from '../../kernel/module.js';
import type { DocumentsConfig } from './documents.config.js';
import {
  ContentQuery,
  DocumentParams,
  DuplicateBody,
  DuplicateParams,
  EditBody,
  SaveDocumentBody,
  UiAnnotationsBody,
  UiPendingChangesBody,
  UiPreviewStateBody,
  UiSaveBody,
  UiThumbnailBody,
  VersionParams,
  VersionQuery,
} from './dto/document.dto.js';
import {
  contentResponseSchema,
  documentSchema,
  editResultSchema,
  fileNodeResponseSchema,
  rollbackResultSchema,
  savedVersionSchema,
  successSchema,
  thumbnailResultSchema,
  uiStateResultSchema,
  uiStateSchema,
  versionPageSchema,
  versionSchema,
} from './schemas.js';
import { authorOf, DocumentService } from './services/document.service.js';
import { UiStateService } from './services/ui-state.service.js';
import { VersionService } from './services/version.service.js';
import { toDocumentView, toUiStateView, toVersionView } from './views.js';

const tags = ['Documents'];
/** combinedAuth: a JWT, an API key or an agent token (spec, Authentication rule 4). */
export const combinedAuth = ['jwt', 'api_key', 'agent_token'] as const;
/** The spec's Errors table answers 400 for bad document request bodies. */
export const documentValidation = { status: 400, code: 'validation_failed' };
const missing = 'No such document, or no access to it (document_not_found)';
const readOnly = 'You may read but not write this document (write_permission_required)';

/** The document routes; body limits follow `documents.maxContentBytes`. */
export function documentRoutes(ctx: ModuleContext): RouteDefinition[] {
  const config = ctx.section as DocumentsConfig;
  const contentBody = Math.max(ctx.config.server.maxBodyBytes, config.maxContentBytes * 2 + 65_536);

  return [
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/content',
      summary: 'Read a document: content, content_hash (the version), title',
      description: 'With `format=markdown-ir` the content is markdown-ir text (docs/markdown-ir.md); // comment lines are dropped unless `keep_comments` is 1 or true, and always for agent tokens.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      query: ContentQuery,
      validationError: documentValidation,
      response: { schema: contentResponseSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const documents = ctx.get(DocumentService);
        const principal = ctx.requirePrincipal();
        await documents.requireDocument(ctx.em, ctx.params.documentId, principal);
        const gate = documents.gate;
        if (gate?.isLive(ctx.params.documentId)) await gate.flush(ctx.params.documentId);
        const { doc } = await documents.requireDocument(ctx.em.fork(), ctx.params.documentId, principal);
        return {
          id: doc.id,
          project_id: doc.project.id,
          title: doc.title,
          content: documents.render(doc, principal, ctx.query.format, ctx.query.keep_comments === true),
          content_hash: doc.contentHash,
          content_source: documents.contentSource(doc),
          format: ctx.query.format ?? 'json',
          updated_at: doc.updatedAt.toISOString(),
        };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents',
      summary: 'Create a document in a project, or edit one',
      description:
        'With `projectId` (and `title`, optional `content`, `content_format`, `parentKey`, `docType`) creates a document in the project file tree and answers 201. With `documentId` changes its `title` and/or replaces its `content` (optionally guarded by `base_version`) and answers 200.',
      tags,
      auth: combinedAuth,
      body: SaveDocumentBody,
      maxBodyBytes: contentBody,
      validationError: documentValidation,
      response: { status: 201, description: 'Created (with projectId)', schema: documentSchema, alternatives: [{ status: 200, description: 'Edited (with documentId)', schema: documentSchema }] },
      errors: {
        400: 'Neither or both of projectId and documentId, no title on create, or invalid content (validation_failed, invalid_content, invalid_markdown_ir)',
        403: 'No write permission (project_access_denied, write_permission_required)',
        404: 'No such project, document or parent folder (project_not_found, document_not_found, node_not_found)',
        409: 'base_version is not current (version_conflict)',
        413: 'The content is too large (content_too_large)',
        422: 'parentKey names a file, not a folder (parent_not_folder)',
      },
      async handler(ctx) {
        const documents = ctx.get(DocumentService);
        const principal = ctx.requirePrincipal();
        const body = ctx.body;
        if ((body.projectId === undefined) === (body.documentId === undefined)) {
          throw new TrellisError('bad_request', 'validation_failed', 'Send projectId to create a document, or documentId to edit one (not both).', {
            details: [{ field: body.projectId ? 'documentId' : 'projectId', constraint: 'exactlyOne', message: 'exactly one of projectId and documentId' }],
          });
        }
        if (body.projectId) {
          if (body.title === undefined) {
            throw new TrellisError('bad_request', 'validation_failed', 'Creating a document needs a title.', { details: [{ field: 'title', constraint: 'required', message: 'is required to create' }] });
          }
          if (body.base_version !== undefined) throw new TrellisError('bad_request', 'validation_failed', 'base_version applies to edits only.', { details: [{ field: 'base_version', constraint: 'editOnly', message: 'only with documentId' }] });
          const { doc, node } = await documents.create(ctx.em, principal, {
            projectId: body.projectId,
            title: body.title,
            content: body.content,
            contentFormat: body.content_format,
            parentKey: body.parentKey,
            docType: body.docType,
          });
          return Reply.json({ ...toDocumentView(doc, documents.contentSource(doc)), node }, 201);
        }
        if (body.parentKey !== undefined || body.docType !== undefined) {
          throw new TrellisError('bad_request', 'validation_failed', 'parentKey and docType apply when creating only.', { details: [{ field: body.parentKey !== undefined ? 'parentKey' : 'docType', constraint: 'createOnly', message: 'only with projectId' }] });
        }
        const doc = await documents.update(ctx.em, principal, {
          documentId: body.documentId!,
          title: body.title,
          content: body.content,
          contentFormat: body.content_format,
          baseVersion: body.base_version,
        });
        return Reply.json(toDocumentView(doc, documents.contentSource(doc)), 200);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/edit',
      summary: 'Edit a document: whole content or block commands, with optimistic concurrency',
      description:
        'Commands (list, read, read_range, write, insert, delete, replace, move, str_replace) apply in order to a copy of the content; the edit is all or nothing. A stale base_version answers 409 with the current version and content; active collaborative connections answer 423.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: EditBody,
      maxBodyBytes: contentBody,
      validationError: documentValidation,
      response: { schema: editResultSchema },
      errors: {
        400: 'base_version missing, mode invalid, commands empty (validation_failed); a command failed (command_failed); bad content (invalid_content, invalid_markdown_ir)',
        403: readOnly,
        404: missing,
        409: 'base_version is not current (version_conflict, with current_version and current_content); an agent token replacing the whole content of a document with comments (comment_preservation_required)',
        413: 'The content is too large (content_too_large)',
        423: 'Collaborative connections are active (document_locked, with active_connections and scope local)',
      },
      async handler(ctx) {
        const outcome = await ctx.get(DocumentService).edit(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.body);
        return { success: true as const, version: outcome.version, results: outcome.results };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/documents/:documentId',
      summary: 'Delete a document (soft) and remove it from the file tree',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      response: { schema: successSchema },
      errors: { 403: readOnly, 404: `${missing}; a repeated delete answers 404 too` },
      async handler(ctx) {
        await ctx.get(DocumentService).delete(ctx.em, ctx.requirePrincipal(), ctx.params.documentId);
        return { success: true as const };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:projectId/duplicate',
      summary: 'Duplicate a file or folder of a project file tree',
      description:
        'Copies a document, or a folder with everything below it, next to the original, labelled `[Copy] …` (`[Copy-2] …` when the label already starts with `[Copy]`). JWT only.',
      tags,
      auth: ['jwt'],
      params: DuplicateParams,
      body: DuplicateBody,
      validationError: documentValidation,
      response: { schema: fileNodeResponseSchema },
      errors: {
        400: 'nodeKey and nodeType are required (validation_failed)',
        403: 'Not a JWT (credential_not_allowed), or not the project owner or a team member (project_access_denied)',
        404: 'No such project (project_not_found), or no such node in filesFolder (node_not_found)',
      },
      async handler(ctx) {
        const node = await ctx.get(DocumentService).duplicate(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, ctx.body.nodeKey, ctx.body.nodeType);
        return { success: true as const, node };
      },
    }),
    // Versions -----------------------------------------------------------------------------
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/versions',
      summary: 'List the versions of a document, newest first',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      query: VersionQuery,
      validationError: documentValidation,
      response: { schema: versionPageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(VersionService).list(
          ctx.em,
          ctx.requirePrincipal(),
          ctx.params.documentId,
          { source: ctx.query.source, authorId: ctx.query.author_id, from: ctx.query.from ? new Date(ctx.query.from) : undefined, to: ctx.query.to ? new Date(ctx.query.to) : undefined },
          p,
        );
        return pageOf(items.map((v) => toVersionView(v)), total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/versions/:versionId',
      summary: 'Read one version with its content',
      tags,
      auth: combinedAuth,
      params: VersionParams,
      response: { schema: versionSchema },
      errors: { 404: `${missing}; or no such version (version_not_found)` },
      async handler(ctx) {
        const version = await ctx.get(VersionService).get(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.versionId);
        return toVersionView(version, version.content);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/versions/:versionId/rollback',
      summary: "Roll the content back to a version's (the rollback is a new version)",
      tags,
      auth: combinedAuth,
      params: VersionParams,
      response: { schema: rollbackResultSchema },
      errors: { 403: readOnly, 404: `${missing}; or no such version (version_not_found)` },
      async handler(ctx) {
        const { version, versionId } = await ctx.get(VersionService).rollback(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.versionId);
        return { success: true as const, version, version_id: versionId };
      },
    }),
    // UI preview ---------------------------------------------------------------------------
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/ui-state',
      summary: 'Read the UI preview state (annotations, pending changes, preview state, thumbnail)',
      description: 'A Trellis addition that reads back what the ui-* endpoints store.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      response: { schema: uiStateSchema },
      errors: { 404: missing },
      async handler(ctx) {
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, ctx.requirePrincipal());
        return toUiStateView(ctx.params.documentId, await ctx.get(UiStateService).get(ctx.em, ctx.params.documentId));
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/ui-annotations',
      summary: 'Save the annotations of the UI preview (replaces the stored list)',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: UiAnnotationsBody,
      validationError: documentValidation,
      response: { schema: uiStateResultSchema },
      errors: { 400: 'annotations must be an array of objects (validation_failed)', 403: readOnly, 404: missing },
      async handler(ctx) {
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, ctx.requirePrincipal(), 'write');
        const state = await ctx.get(UiStateService).mutate(ctx.em, ctx.params.documentId, (s) => ({ ...s, annotations: ctx.body.annotations as never }));
        return { success: true as const, ui_state: toUiStateView(ctx.params.documentId, state) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/ui-pending-changes',
      summary: "Submit UI preview changes awaiting the user's confirmation (an empty list clears them)",
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: UiPendingChangesBody,
      validationError: documentValidation,
      response: { schema: uiStateResultSchema },
      errors: { 400: 'changes must be an array of objects (validation_failed)', 403: readOnly, 404: missing },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, principal, 'write');
        const pending = ctx.body.changes.length
          ? { changes: ctx.body.changes, summary: ctx.body.summary ?? null, submitted_at: new Date().toISOString(), submitted_by: principal.userId }
          : null;
        const state = await ctx.get(UiStateService).mutate(ctx.em, ctx.params.documentId, (s) => ({ ...s, pendingChanges: pending as never }));
        return { success: true as const, ui_state: toUiStateView(ctx.params.documentId, state) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/ui-preview-state',
      summary: 'Save the UI preview state (screen, viewport, render state); omitted fields stay unchanged',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: UiPreviewStateBody,
      validationError: documentValidation,
      response: { schema: uiStateResultSchema },
      errors: { 400: 'Wrong field types (validation_failed)', 403: readOnly, 404: missing },
      async handler(ctx) {
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, ctx.requirePrincipal(), 'write');
        const given = Object.fromEntries(Object.entries({ screen: ctx.body.screen, viewport: ctx.body.viewport, render_state: ctx.body.render_state }).filter(([, v]) => v !== undefined));
        const state = await ctx.get(UiStateService).mutate(ctx.em, ctx.params.documentId, (s) => ({ ...s, previewState: { ...s.previewState, ...given } as never }));
        return { success: true as const, ui_state: toUiStateView(ctx.params.documentId, state) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/ui-save',
      summary: 'Save UI editor output into the document (a new version; clears pending changes)',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: UiSaveBody,
      maxBodyBytes: contentBody,
      validationError: documentValidation,
      response: { schema: savedVersionSchema },
      errors: {
        400: 'content missing or invalid (validation_failed, invalid_content, invalid_markdown_ir)',
        403: readOnly,
        404: missing,
        409: 'base_version is not current (version_conflict); agent token replacing content with comments (comment_preservation_required)',
        413: 'The content is too large (content_too_large)',
      },
      async handler(ctx) {
        const documents = ctx.get(DocumentService);
        const principal = ctx.requirePrincipal();
        const { doc } = await documents.requireDocument(ctx.em, ctx.params.documentId, principal, 'write');
        const { content } = documents.computeEdit(doc.content, { mode: 'content', content: ctx.body.content, content_format: ctx.body.content_format }, principal);
        const version = await documents.write(ctx.em, doc, content, { author: authorOf(principal), source: 'ui_save', expectedHash: ctx.body.base_version });
        await ctx.get(UiStateService).mutate(ctx.em, ctx.params.documentId, (s) => ({ ...s, pendingChanges: null }));
        return { success: true as const, version };
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/documents/:documentId/ui-thumbnail',
      summary: 'Update the UI thumbnail; omitted fields stay unchanged',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: UiThumbnailBody,
      validationError: documentValidation,
      response: { schema: thumbnailResultSchema },
      errors: { 400: 'Wrong field types (validation_failed)', 403: readOnly, 404: missing },
      async handler(ctx) {
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, ctx.requirePrincipal(), 'write');
        const given = Object.fromEntries(Object.entries(ctx.body).filter(([, v]) => v !== undefined));
        const state = await ctx.get(UiStateService).mutate(ctx.em, ctx.params.documentId, (s) => ({ ...s, thumbnail: { ...s.thumbnail, ...given } as never }));
        return { success: true as const, thumbnail: state.thumbnail };
      },
    }),
  ];
}
