import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Kernel, SocketLike } from '@trellis/core';
import { WebSocketServer, type WebSocket } from 'ws';
import { flattenHeaders, normalisePrefix } from './node-handler.js';

export interface AttachWebSocketsOptions {
  /** Mount prefix in front of the channel paths (`/api` serves `/api/v3/wss`). */
  prefix?: string;
}

export interface AttachedWebSockets {
  /** Stops answering upgrades and closes this binding's sockets. */
  close(): Promise<void>;
}

/** Above this many queued bytes a socket counts as slow (`send` returns false). */
const SLOW_SOCKET_BYTES = 1 << 20;

/**
 * Serves the kernel's WebSocket channels on a `node:http` server through `ws`. Upgrades for paths
 * that no channel serves are left to other `upgrade` listeners, or refused with 404 when there
 * are none.
 */
export function attachWebSockets(server: Server, kernel: Kernel, options: AttachWebSocketsOptions = {}): AttachedWebSockets {
  const prefix = normalisePrefix(options.prefix);
  const servers = new Map<number, WebSocketServer>();
  const serverFor = (maxPayload: number) => {
    let wss = servers.get(maxPayload);
    if (!wss) servers.set(maxPayload, (wss = new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate: false })));
    return wss;
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q === -1 ? url : url.slice(0, q);
    const ours = !prefix || path === prefix || path.startsWith(`${prefix}/`);
    if (ours && prefix) path = path.slice(prefix.length) || '/';
    if (!ours || !kernel.ws.matches(path)) {
      if (server.listenerCount('upgrade') === 1) refuse(socket, 404, '{"error":"channel_not_found","message":"No WebSocket channel here."}');
      return;
    }
    void (async () => {
      const decision = await kernel.ws.upgrade({
        path,
        query: q === -1 ? '' : url.slice(q + 1),
        headers: flattenHeaders(req),
        remoteAddress: req.socket.remoteAddress ?? '',
      });
      if (!decision.ok) {
        refuse(socket, decision.response.status, String(decision.response.body ?? ''), decision.response.headers);
        return;
      }
      if (socket.destroyed) return;
      serverFor(decision.maxPayloadBytes).handleUpgrade(req, socket, head, (ws) => {
        const session = decision.open(wrap(ws, req.socket.remoteAddress ?? ''));
        ws.on('message', (data, isBinary) => {
          const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
          session.onMessage(isBinary ? bytes : bytes.toString('utf8'), isBinary);
        });
        ws.on('close', (code, reason) => session.onClose(code, reason.toString('utf8')));
        ws.on('error', () => ws.terminate());
      });
    })().catch(() => refuse(socket, 500, '{"error":"internal_error","message":"An internal error occurred."}'));
  };

  server.on('upgrade', onUpgrade);
  return {
    async close() {
      server.off('upgrade', onUpgrade);
      for (const wss of servers.values()) {
        for (const client of wss.clients) client.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      }
    },
  };
}

function wrap(ws: WebSocket, remoteAddress: string): SocketLike {
  return {
    send(data, isBinary = typeof data !== 'string') {
      if (ws.readyState !== ws.OPEN) return false;
      ws.send(data, { binary: isBinary });
      return ws.bufferedAmount < SLOW_SOCKET_BYTES;
    },
    close(code, reason) {
      ws.close(code, reason);
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    remoteAddress,
  };
}

const reasons: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };

function refuse(socket: Duplex, status: number, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}`, 'connection: close', 'content-type: application/json; charset=utf-8', `content-length: ${Buffer.byteLength(body)}`];
  for (const [name, value] of Object.entries(headers)) if (name !== 'content-type') lines.push(`${name}: ${value}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
