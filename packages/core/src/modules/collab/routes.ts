import { dateTime, nullable, stringEnum, Type } from '../../kernel/http/response-schema.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import type { ModuleContext } from '../../kernel/module.js';
import { type CommandResult, type DocumentsConfig, DocumentParams, SmartEditBody, combinedAuth, documentValidation, DocumentService } from '../documents/index.js';
import { CollabEditBody, CollabLeaveBody, YjsStateBody } from './dto/collab.dto.js';
import { CollabService } from './services/collab.service.js';
import { SmartEditService } from './services/smart-edit.service.js';
import { YjsStateService } from './services/yjs-state.service.js';

const tags = ['Collaboration'];
const missing = 'No such document, or no access to it (document_not_found)';
const readOnly = 'You may read but not write this document (write_permission_required)';

/** The collaboration responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
const collaboratorSchema = Type.Object({
  clientId: Type.Integer({ description: 'The Yjs client id of the editor.' }),
  userId: nullable(Type.String()),
  name: nullable(Type.String()),
  color: nullable(Type.String()),
  cursor: nullable(Type.Object({ anchor: Type.Optional(Type.Number()), head: Type.Optional(Type.Number()) })),
  selection: nullable(Type.Object({ blockId: Type.Optional(Type.String()), blockType: Type.Optional(Type.String()), text: Type.Optional(Type.String()) })),
});

const editResponse = Type.Object({
  success: Type.Literal(true),
  mode: stringEnum(['rest', 'collab'], { description: 'The road the edit took.' }),
  version: Type.String({ description: 'The content_hash after the edit.' }),
  // Each is the documents module's CommandResult, published as any object (its shape is declared there, not here).
  results: Type.Optional(Type.Array(Type.Unsafe<CommandResult>({ type: 'object' }))),
});

const awarenessSchema = Type.Object({ collaborators: Type.Array(collaboratorSchema), active_connections: Type.Integer(), scope: Type.Literal('local') });

const yjsStateSchema = Type.Object({ state: nullable(Type.Array(Type.Integer())) });

const successSchema = Type.Object({ success: Type.Literal(true) });

const joinSchema = Type.Object({
  success: Type.Literal(true),
  participant_id: Type.String(),
  content_source: Type.Literal('collab'),
  active_connections: Type.Integer(),
  websocket_path: Type.String({ description: '/v3/collab/{documentId}; add ?token=<bearer token>.' }),
  protocol: Type.Literal('y-websocket'),
  fragment: Type.Literal('default'),
  expires_at: dateTime(),
  state: Type.Array(Type.Integer()),
});

const leaveSchema = Type.Object({ success: Type.Literal(true), left: Type.Integer({ description: 'Participations removed.' }), active_connections: Type.Integer() });

/** Smart-edit, awareness, yjs-state and the REST side of collaborative editing. */
export function collabRoutes(ctx: ModuleContext): RouteDefinition[] {
  const documents = ctx.config.documents as DocumentsConfig;
  const contentBody = Math.max(ctx.config.server.maxBodyBytes, documents.maxContentBytes * 2 + 65_536);
  const stateBody = Math.max(ctx.config.server.maxBodyBytes, documents.maxContentBytes * 16);
  return [
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/smart-edit',
      summary: 'Edit a document by whichever road is open (REST or the collaborative channel)',
      description:
        'A document in collab mode is edited through the collaborative channel: the edit is one Yjs transaction that connected editors receive live (`mode: collab`). Otherwise the REST edit is tried; a 423 switches to the collaborative channel; without base_version a version conflict is retried on the current version until the edit lands (at most 10 s, then 503 busy), never answered 409.',
      tags: ['Documents', ...tags],
      auth: ['jwt', 'agent_token'],
      params: DocumentParams,
      body: SmartEditBody,
      maxBodyBytes: contentBody,
      validationError: documentValidation,
      response: { schema: editResponse },
      errors: {
        400: 'Bad request or a failed command (validation_failed, command_failed, invalid_content, invalid_markdown_ir)',
        403: `Not a JWT or agent token (credential_not_allowed); ${readOnly}`,
        404: missing,
        409: 'version_conflict (only when you supplied base_version); comment_preservation_required (an agent token replacing the whole content of a document with comments: use commands mode)',
        413: 'The content is too large (content_too_large)',
      },
      async handler(ctx) {
        const outcome = await ctx.get(SmartEditService).edit(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.body);
        return { success: true as const, mode: outcome.mode, version: outcome.version, results: outcome.results };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/awareness',
      summary: 'Online collaborators of a document (this process)',
      description: '`scope` is always `local`: only collaboration connections held by the process that answers are counted.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      response: { schema: awarenessSchema },
      errors: { 404: missing },
      async handler(ctx) {
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, ctx.requirePrincipal());
        const { collaborators, activeConnections } = ctx.get(CollabService).awareness(ctx.params.documentId);
        return { collaborators, active_connections: activeConnections, scope: 'local' as const };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/yjs-state',
      summary: 'The stored collaboration (Yjs) state; null when there is none',
      tags,
      auth: ['jwt', 'api_key'],
      params: DocumentParams,
      response: { schema: yjsStateSchema },
      errors: { 403: 'Not a JWT or API key (credential_not_allowed)', 404: missing },
      async handler(ctx) {
        return { state: await ctx.get(YjsStateService).read(ctx.em, ctx.requirePrincipal(), ctx.params.documentId) };
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/documents/:documentId/yjs-state',
      summary: 'Store the collaboration (Yjs) state',
      description:
        'While a collaborative session holds the document the state is applied to it as a Yjs update; otherwise it replaces the stored state and the JSON content is mirrored from it (a new version, source `yjs_state`).',
      tags,
      auth: ['jwt', 'api_key'],
      params: DocumentParams,
      body: YjsStateBody,
      maxBodyBytes: stateBody,
      validationError: documentValidation,
      response: { schema: successSchema },
      errors: {
        400: 'state missing or not an array of bytes (validation_failed); not a decodable Yjs update (invalid_yjs_state)',
        403: `Not a JWT or API key (credential_not_allowed); ${readOnly}`,
        404: missing,
        413: 'The content the state holds is too large (content_too_large)',
      },
      async handler(ctx) {
        await ctx.get(YjsStateService).write(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.body.state);
        return { success: true as const };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/collab/join',
      summary: 'Join collaborative editing over REST (the document enters collab mode)',
      description:
        'Registers you as a participant for `collab.participantTtlMs` (renewed by each collab edit or join). Answers where editors connect (`websocket_path`, y-websocket protocol, fragment `default`) and the current Yjs state.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      response: { schema: joinSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        const { permissions } = await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, principal);
        // A reader may join (to follow along) but does not count as an editor for the 423 rule.
        const joined = await ctx.get(CollabService).join(ctx.params.documentId, principal, permissions.has('write'));
        return {
          success: true as const,
          participant_id: joined.participantId,
          content_source: 'collab' as const,
          active_connections: joined.activeConnections,
          websocket_path: `/v3/collab/${ctx.params.documentId}`,
          protocol: 'y-websocket' as const,
          fragment: 'default' as const,
          expires_at: joined.expiresAt.toISOString(),
          state: Array.from(joined.state),
        };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/collab/leave',
      summary: 'Leave collaborative editing over REST',
      description: 'When nobody else collaborates, pending changes are mirrored and the document returns to rest mode.',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: CollabLeaveBody,
      validationError: documentValidation,
      response: { schema: leaveSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, principal);
        const collab = ctx.get(CollabService);
        const left = await collab.leave(ctx.params.documentId, principal, ctx.body.participant_id);
        return { success: true as const, left, active_connections: collab.localConnections(ctx.params.documentId) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/collab/edit',
      summary: 'Edit through the collaborative channel (a Yjs transaction editors receive live)',
      tags,
      auth: combinedAuth,
      params: DocumentParams,
      body: CollabEditBody,
      maxBodyBytes: contentBody,
      validationError: documentValidation,
      response: { schema: editResponse },
      errors: {
        400: 'Bad request or a failed command (validation_failed, command_failed, invalid_content)',
        403: readOnly,
        404: missing,
        409: 'An agent token replacing the whole content of a document with comments (comment_preservation_required)',
        413: 'The content is too large (content_too_large)',
      },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        await ctx.get(DocumentService).requireDocument(ctx.em, ctx.params.documentId, principal, 'write');
        const collab = ctx.get(CollabService);
        collab.touch(ctx.params.documentId, principal);
        const { version, results } = await collab.edit(ctx.params.documentId, ctx.body, principal, 'collab_edit');
        return { success: true as const, mode: 'collab' as const, version, results };
      },
    }),
  ];
}
