import { extractBearer } from '../../kernel/auth/authenticator.js';
import { TrellisError } from '../../kernel/errors.js';
import { requireScopes, scopesAllow } from '../../kernel/auth/scopes.js';
import { authenticatorServiceIdentifier, configServiceIdentifier, ormServiceIdentifier } from '../../kernel/tokens.js';
import { defineChannel } from '../../kernel/ws/channel.js';
import { documentNotFound } from '../documents/errors.js';
import { documentScopes } from '../projects/scopes.js';
import { DocumentService } from '../documents/services/document.service.js';
import type { CollabConfig } from './collab.config.js';
import { CollabService } from './services/collab.service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const acceptedKinds = new Set(['jwt', 'api_key', 'agent_token']);

/**
 * Collaborative editing over WebSocket: `/v3/collab/{documentId}?token=...` speaks the y-websocket
 * protocol (sync and awareness), so a stock Yjs `WebsocketProvider` connects unchanged
 * (`new WebsocketProvider(`${base}/v3/collab`, documentId, ydoc, { params: { token } })`).
 * The token (or an `Authorization: Bearer` header) is a JWT, API key or agent token; the caller
 * needs read permission to connect, and write permission for its updates to be accepted.
 */
export const collabChannel = (config: Pick<CollabConfig, 'maxFrameBytes' | 'maxReadOnlyFrameBytes'>) =>
  defineChannel({
    name: 'collab',
    path: '/v3/collab/:documentId',
    // Writers' limit; a read-only connection gets the smaller, awareness-sized one.
    maxPayloadBytes: config.maxFrameBytes,
    async accept(request, ctx) {
      const documentId = request.params.documentId ?? '';
      if (!UUID.test(documentId)) throw documentNotFound();
      const token = request.query.get('token') || extractBearer(request.headers);
      if (!token) throw new TrellisError('unauthenticated', 'missing_credentials', 'Connect with ?token=<bearer token>.');
      const principal = await ctx.get(authenticatorServiceIdentifier).authenticate(token, { ip: request.remoteAddress, userAgent: request.headers['user-agent'] ?? '' });
      if (!acceptedKinds.has(principal.kind)) {
        throw new TrellisError('forbidden', 'credential_not_allowed', 'Collaborative editing accepts a JWT, an API key or an agent token.');
      }
      const fullAccess = ctx.get(configServiceIdentifier).auth.fullAccessScopes;
      requireScopes(principal, documentScopes.read, fullAccess);
      const em = ctx.get(ormServiceIdentifier).em.fork();
      const { permissions } = await ctx.get(DocumentService).requireDocument(em, documentId, principal, 'read');
      const collab = ctx.get(CollabService);
      // A credential scoped to reading joins read-only, like a user without write permission.
      const canWrite = permissions.has('write') && scopesAllow(principal, documentScopes.write, fullAccess);
      return {
        open: (socket) => collab.connect(documentId, socket, principal, canWrite),
        maxPayloadBytes: canWrite ? config.maxFrameBytes : config.maxReadOnlyFrameBytes,
      };
    },
  });
