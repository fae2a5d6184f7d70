import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import { isStreamBody, type ChannelSession, type Kernel, type KernelRequest, type KernelResponse, type SocketLike, type UpgradeDecision } from '@trellis/core';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from 'uWebSockets.js';
import type { Transport } from './transport.js';

type Uws = typeof import('uWebSockets.js');

/** One write per tick, capped near the 16 KB cork buffer (see docs/architecture.md, "uWS writes"). */
const MAX_WRITE_BYTES = 16 * 1024;
/** Bytes a stream may have produced and not yet written before the producer is paused. */
const STREAM_HIGH_WATER = 64 * 1024;
const MAX_WS_BACKPRESSURE = 4 * 1024 * 1024;

const EMPTY = Buffer.alloc(0);

/**
 * Loads the native uWebSockets.js binding. The npm package behind the alias silently swaps in a
 * slow JavaScript imitation when its binary does not match this Node; that counts as "cannot load"
 * so the host uses its own `node:http` transport instead.
 */
function loadNativeUws(): Uws {
  const require = createRequire(import.meta.url);
  const uws = require('uWebSockets.js') as Uws & Record<string, unknown>;
  if (typeof uws.SSLApp !== 'function' || typeof uws.getParts !== 'function') {
    throw new Error(`no native uWebSockets.js binary for ${process.platform}-${process.arch} Node ABI ${process.versions.modules}`);
  }
  return uws;
}

const uws = loadNativeUws();

interface SocketData {
  decision?: Extract<UpgradeDecision, { ok: true }>;
  session?: ChannelSession;
  closed: boolean;
}

/** The default transport: uWebSockets.js for HTTP and WebSockets. */
export function createUwsTransport(kernel: Kernel): Transport {
  const app: TemplatedApp = uws.App();
  let listenSocket: us_listen_socket | undefined;

  app.any('/*', (res, req) => handleHttp(kernel, res, req));
  const basePath = kernel.config.server.basePath;
  for (const channel of kernel.channels) {
    app.ws<SocketData>(`${basePath}${channel.path}`, {
      maxPayloadLength: channel.maxPayloadBytes ?? 1_048_576,
      idleTimeout: 0,
      maxBackpressure: MAX_WS_BACKPRESSURE,
      closeOnBackpressureLimit: 0,
      sendPingsAutomatically: false,
      upgrade: (res, req, context) => upgrade(kernel, res, req, context),
      open: (ws) => {
        const data = ws.getUserData();
        data.session = data.decision!.open(wrapSocket(ws));
        data.decision = undefined;
      },
      message: (ws, message, isBinary) => {
        const session = ws.getUserData().session;
        if (!session) return;
        session.onMessage(isBinary ? Buffer.from(message.slice(0)) : Buffer.from(message).toString('utf8'), isBinary);
      },
      drain: (ws) => ws.getUserData().session?.onDrain?.(),
      close: (ws, code, message) => {
        const data = ws.getUserData();
        data.closed = true;
        data.session?.onClose(code, Buffer.from(message).toString('utf8'));
      },
    });
  }

  return {
    name: 'uws',
    listen(host, port) {
      return new Promise((resolve, reject) => {
        app.listen(host, port, (socket) => {
          if (!socket) {
            reject(new Error(`uWebSockets.js could not listen on ${host}:${port} (address in use or not available)`));
            return;
          }
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket as never));
        });
      });
    },
    async stopAccepting() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    async close() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      (app as TemplatedApp & { close(): void }).close();
    },
  };
}

interface HttpState {
  aborted: boolean;
  abort: AbortController;
}

function handleHttp(kernel: Kernel, res: HttpResponse, req: HttpRequest): void {
  // The request object is only valid during this call: copy what we need first.
  const method = req.getCaseSensitiveMethod().toUpperCase();
  const path = req.getUrl();
  const query = req.getQuery() ?? '';
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  });
  const state: HttpState = { aborted: false, abort: new AbortController() };
  res.onAborted(() => {
    state.aborted = true;
    state.abort.abort();
  });
  const request: KernelRequest = {
    method,
    path,
    query,
    headers,
    remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
    signal: state.abort.signal,
  };
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || headers['content-length'] === '0') {
    void respond(kernel, res, state, request, kernel.http.handle(request));
    return;
  }
  const limit = kernel.http.bodyLimitFor(method, path);
  const declared = Number(headers['content-length'] ?? NaN);
  if (declared > limit) {
    void respond(kernel, res, state, request, Promise.resolve(kernel.http.payloadTooLarge(request)), true);
    return;
  }
  let chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  res.onData((chunk, isLast) => {
    if (refused) return;
    size += chunk.byteLength;
    if (size > limit) {
      refused = true;
      chunks = [];
      void respond(kernel, res, state, request, Promise.resolve(kernel.http.payloadTooLarge(request)), true);
      return;
    }
    // uWS reuses the chunk's memory after this callback: copy it.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      chunks = [];
      void respond(kernel, res, state, request, kernel.http.handle({ ...request, body: size ? body : undefined }));
    }
  });
}

async function respond(kernel: Kernel, res: HttpResponse, state: HttpState, request: KernelRequest, pending: Promise<KernelResponse>, closeConnection = false): Promise<void> {
  let response: KernelResponse;
  try {
    response = await pending;
  } catch (error) {
    kernel.log.error({ err: error }, 'request handling failed outside the dispatcher');
    response = { status: 500, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"error":"internal_error","message":"An internal error occurred."}' };
  }
  if (state.aborted) {
    if (isStreamBody(response.body)) await response.body[Symbol.asyncIterator]().return?.();
    return;
  }
  const { body } = response;
  if (!isStreamBody(body)) {
    res.cork(() => {
      writeHead(res, response);
      if (request.method === 'HEAD' || response.status === 204 || response.status === 304) res.endWithoutBody(request.method === 'HEAD' ? byteLength(body) : undefined, closeConnection);
      else res.end(body ?? EMPTY, closeConnection);
    });
    return;
  }
  res.cork(() => writeHead(res, response));
  await pumpStream(res, state, body[Symbol.asyncIterator]());
}

function writeHead(res: HttpResponse, response: KernelResponse): void {
  res.writeStatus(`${response.status} ${STATUS_CODES[response.status] ?? ''}`);
  for (const [name, value] of Object.entries(response.headers)) {
    if (name !== 'content-length') res.writeHeader(name, value);
  }
}

function byteLength(body: KernelResponse['body']): number {
  if (body === null) return 0;
  return typeof body === 'string' ? Buffer.byteLength(body) : (body as Uint8Array).byteLength;
}

/**
 * Writes a stream with back-pressure: chunks produced within one tick are joined and written in
 * one corked write of at most 16 KB; when uWS reports back-pressure the producer waits for
 * `onWritable`; when the client goes away the producer is stopped (`return()`).
 */
async function pumpStream(res: HttpResponse, state: HttpState, iterator: AsyncIterator<string | Uint8Array>): Promise<void> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let blocked = false;
  let scheduled = false;
  let waiter: (() => void) | undefined;
  const wake = () => {
    const w = waiter;
    waiter = undefined;
    w?.();
  };
  const wait = () => new Promise<void>((resolve) => (waiter = resolve));
  state.abort.signal.addEventListener('abort', wake, { once: true });

  const flush = () => {
    scheduled = false;
    if (state.aborted || blocked || pendingBytes === 0) return wake();
    const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    let offset = 0;
    res.cork(() => {
      while (offset < all.length && !blocked) {
        const piece = all.subarray(offset, offset + MAX_WRITE_BYTES);
        offset += piece.length;
        if (!res.write(piece)) blocked = true;
      }
    });
    if (offset < all.length) {
      pending = [all.subarray(offset)];
      pendingBytes = all.length - offset;
    }
    if (blocked) {
      res.onWritable(() => {
        blocked = false;
        flush();
        return !blocked;
      });
    }
    wake();
  };
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  try {
    for (;;) {
      while (!state.aborted && (blocked || pendingBytes > STREAM_HIGH_WATER)) await wait();
      if (state.aborted) break;
      const step = await iterator.next();
      if (step.done || state.aborted) break;
      const chunk = typeof step.value === 'string' ? Buffer.from(step.value) : Buffer.from(step.value.buffer, step.value.byteOffset, step.value.byteLength);
      if (chunk.length === 0) continue;
      pending.push(chunk);
      pendingBytes += chunk.length;
      schedule();
    }
    while (!state.aborted && (pendingBytes > 0 || blocked)) {
      if (!blocked) schedule();
      await wait();
    }
    if (!state.aborted) res.cork(() => res.end());
  } catch {
    // The producer failed after the head went out: cut the connection so the client sees it end early.
    if (!state.aborted) res.close();
  } finally {
    await iterator.return?.();
  }
}

function upgrade(kernel: Kernel, res: HttpResponse, req: HttpRequest, context: unknown): void {
  const path = req.getUrl();
  const query = req.getQuery() ?? '';
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    headers[name] = value;
  });
  const secKey = headers['sec-websocket-key'] ?? '';
  const secProtocol = headers['sec-websocket-protocol'] ?? '';
  const secExtensions = headers['sec-websocket-extensions'] ?? '';
  const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  void kernel.ws
    .upgrade({ path, query, headers, remoteAddress })
    .catch((): UpgradeDecision => ({ ok: false, response: { status: 500, headers: {}, body: '{"error":"internal_error","message":"An internal error occurred."}' } }))
    .then((decision) => {
      if (aborted) return;
      res.cork(() => {
        if (!decision.ok) {
          writeHead(res, decision.response);
          res.end(typeof decision.response.body === 'string' ? decision.response.body : EMPTY, true);
          return;
        }
        res.upgrade<SocketData>({ decision, closed: false }, secKey, secProtocol, secExtensions, context as never);
      });
    });
}

function wrapSocket(ws: WebSocket<SocketData>): SocketLike {
  const data = ws.getUserData();
  const remoteAddress = Buffer.from(ws.getRemoteAddressAsText()).toString();
  return {
    send(message, isBinary = typeof message !== 'string') {
      if (data.closed) return false;
      return ws.send(message, isBinary) === 1;
    },
    close(code = 1000, reason = '') {
      if (data.closed) return;
      data.closed = true;
      ws.end(code, reason);
    },
    get bufferedAmount() {
      return data.closed ? 0 : ws.getBufferedAmount();
    },
    remoteAddress,
  };
}
