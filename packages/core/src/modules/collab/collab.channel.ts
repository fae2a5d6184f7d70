import { extractBearer } from '../../kernel/auth/authenticator.js';
import { TrellisError } from '../../kernel/errors.js';
import { defineChannel } from '../../kernel/ws/channel.js';
import { documentNotFound } from '../documents/index.js';
import type { CollabConfig } from './collab.config.js';
import { CollabService } from './services/collab.service.js';
import { isUuid } from '../../kernel/crypto.js';


/**
 * Collaborative editing over WebSocket: `/v3/collab/{documentId}?token=...` speaks the y-websocket
 * protocol (sync and awareness), so a stock Yjs `WebsocketProvider` connects unchanged
 * (`new WebsocketProvider(`${base}/v3/collab`, documentId, ydoc, { params: { token } })`).
 * The token (or an `Authorization: Bearer` header) is a JWT, API key or agent token; the caller
 * needs read permission to connect, and write permission for its updates to be accepted.
 * Access is checked again whenever a change that may withdraw it is signalled (on any process):
 * the socket then closes (4401, 4403, 4404) or turns read-only.
 */
export const collabChannel = (config: Pick<CollabConfig, 'maxFrameBytes' | 'maxReadOnlyFrameBytes'>) =>
  defineChannel({
    name: 'collab',
    path: '/v3/collab/:documentId',
    // Writers' limit; a read-only connection gets the smaller, awareness-sized one.
    maxPayloadBytes: config.maxFrameBytes,
    async accept(request, ctx) {
      const documentId = request.params.documentId ?? '';
      if (!isUuid(documentId)) throw documentNotFound();
      const token = request.query.get('token') || extractBearer(request.headers);
      if (!token) throw new TrellisError('unauthenticated', 'missing_credentials', 'Connect with ?token=<bearer token>.');
      const collab = ctx.get(CollabService);
      const meta = { ip: request.remoteAddress, userAgent: request.headers['user-agent'] ?? '' };
      const access = await collab.authorize(documentId, token, meta);
      return {
        open: (socket) => collab.connect(documentId, socket, access, token, meta),
        maxPayloadBytes: access.canWrite ? config.maxFrameBytes : config.maxReadOnlyFrameBytes,
      };
    },
  });
