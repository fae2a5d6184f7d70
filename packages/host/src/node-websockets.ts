import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ChannelSession, Kernel, SocketLike } from '@trellis/core';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { flattenHeaders, normalisePrefix } from './node-handler.js';
import { internalErrorBody, SLOW_SOCKET_BYTES, SLOW_SOCKET_LIMIT_BYTES, WS_IDLE_TIMEOUT_S } from './shared.js';

export interface AttachWebSocketsOptions {
  /** Mount prefix in front of the channel paths (`/api` serves `/api/v3/wss`). */
  prefix?: string;
}

export interface AttachedWebSockets {
  /** Stops answering upgrades and closes this binding's sockets. */
  close(): Promise<void>;
}

/**
 * Serves the kernel's WebSocket channels on a `node:http` server (a plain one, or the one under
 * Express, Fastify or Nest) through `ws`. Upgrades for paths that no channel serves are left to
 * other `upgrade` listeners, or refused with 404 when there are none; an upgrade a channel refuses
 * gets the HTTP status of its error.
 */
export function attachWebSockets(server: Server, kernel: Kernel, options: AttachWebSocketsOptions = {}): AttachedWebSockets {
  const prefix = normalisePrefix(options.prefix);
  const servers = new Map<number, WebSocketServer>();
  const serverFor = (maxPayload: number) => {
    let wss = servers.get(maxPayload);
    // `ws` closes with 1009 by itself when a message passes maxPayload.
    if (!wss) servers.set(maxPayload, (wss = new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate: false })));
    return wss;
  };
  const alive = new WeakSet<WebSocket>();
  // Ping every socket each half idle period; one that has not answered since the last ping is gone.
  const heartbeat = setInterval(() => {
    for (const wss of servers.values()) {
      for (const ws of wss.clients) {
        if (!alive.has(ws)) {
          ws.terminate();
          continue;
        }
        alive.delete(ws);
        ws.ping();
      }
    }
  }, (WS_IDLE_TIMEOUT_S * 1000) / 2);
  heartbeat.unref();

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q === -1 ? url : url.slice(0, q);
    const ours = !prefix || path === prefix || path.startsWith(`${prefix}/`);
    if (ours && prefix) path = path.slice(prefix.length) || '/';
    if (!ours || !kernel.ws.matches(path)) {
      // Another listener (a framework's own WebSocket support) may want it.
      if (server.listenerCount('upgrade') === 1) refuse(socket, 404, '{"error":"channel_not_found","message":"No WebSocket channel here."}');
      return;
    }
    socket.on('error', () => socket.destroy());
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
        alive.add(ws);
        ws.on('pong', () => alive.add(ws));
        const session = decision.open(wrap(ws, req.socket.remoteAddress ?? '', () => session));
        ws.on('message', (data, isBinary) => {
          alive.add(ws);
          const bytes = toBuffer(data);
          session.onMessage(isBinary ? bytes : bytes.toString('utf8'), isBinary);
        });
        ws.on('close', (code, reason) => session.onClose(code, reason.toString('utf8')));
        ws.on('error', () => ws.terminate());
      });
    })().catch((error: unknown) => {
      kernel.log.error({ err: error }, 'websocket upgrade failed');
      refuse(socket, 500, internalErrorBody);
    });
  };

  server.on('upgrade', onUpgrade);
  return {
    async close() {
      clearInterval(heartbeat);
      server.off('upgrade', onUpgrade);
      for (const wss of servers.values()) {
        for (const client of wss.clients) client.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      }
    },
  };
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/**
 * `ws` as a SocketLike. `send` reports a slow peer (more than SLOW_SOCKET_BYTES queued); the
 * session hears `onDrain` once the queue is back under it; past SLOW_SOCKET_LIMIT_BYTES the
 * socket is closed, as uWS does with its maxBackpressure.
 */
function wrap(ws: WebSocket, remoteAddress: string, session: () => ChannelSession): SocketLike {
  let slow = false;
  const written = () => {
    if (slow && ws.bufferedAmount < SLOW_SOCKET_BYTES) {
      slow = false;
      session().onDrain?.();
    }
  };
  return {
    send(data, isBinary = typeof data !== 'string') {
      if (ws.readyState !== ws.OPEN) return false;
      ws.send(data, { binary: isBinary }, written);
      const buffered = ws.bufferedAmount;
      if (buffered > SLOW_SOCKET_LIMIT_BYTES) {
        ws.terminate();
        return false;
      }
      if (buffered >= SLOW_SOCKET_BYTES) {
        slow = true;
        return false;
      }
      return true;
    },
    close(code, reason) {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    remoteAddress,
  };
}

function refuse(socket: Duplex, status: number, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`, 'connection: close', 'content-type: application/json; charset=utf-8', `content-length: ${Buffer.byteLength(body)}`];
  for (const [name, value] of Object.entries(headers)) {
    if (name !== 'content-type' && name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  }
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
