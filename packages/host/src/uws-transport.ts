import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import { isStreamBody, type ChannelSession, type Kernel, type KernelRequest, type KernelResponse, type SocketLike, type UpgradeDecision } from '@trellis/core';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from 'uWebSockets.js';
import { internalErrorBody, JSON_TYPE, LazyAbort, SLOW_SOCKET_LIMIT_BYTES, toBuffer, TransportRequest, WS_IDLE_TIMEOUT_S, wsPayloadCeiling } from './shared.js';
import { Admission } from './admission.js';
import { upgradeAfterDecision } from './uws-upgrade.js';
import type { Transport } from './transport.js';

type Uws = typeof import('uWebSockets.js');

/**
 * One write per tick, at most this many bytes (see docs/architecture.md, "Transports"): in this
 * uWS build many small writes in one tick get slow once the 16 KB cork buffer is full.
 */
export const MAX_WRITE_BYTES = 16 * 1024;
/** Bytes a stream may have produced and not yet handed to uWS before the producer waits. */
export const STREAM_HIGH_WATER = 64 * 1024;

const EMPTY = Buffer.alloc(0);
/** `uWS.LIBUS_LISTEN_EXCLUSIVE_PORT`. */
const EXCLUSIVE_PORT = 1;

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
  maxPayloadBytes: number;
  closed: boolean;
}

interface HttpState {
  aborted: boolean;
  /** `end` (or `close`) was called: the response object must not be touched again. */
  done: boolean;
  abort: LazyAbort;
}

/** The default transport: uWebSockets.js for HTTP and WebSockets. */
export function createUwsTransport(kernel: Kernel): Transport {
  const app: TemplatedApp = uws.App();
  let listenSocket: us_listen_socket | undefined;
  // Once the host stops accepting, every response closes its connection.
  const edge: Edge = { stopping: false, admission: new Admission(kernel) };
  // The WebSockets open on this app: an upgrade decided later is corked through one of them.
  const openSockets = new Set<WebSocket<SocketData>>();

  app.any('/*', (res, req) => handleHttp(kernel, edge, res, req));
  const basePath = kernel.config.server.basePath;
  for (const channel of kernel.channels) {
    const limit = channel.maxPayloadBytes ?? 1_048_576;
    app.ws<SocketData>(`${basePath}${channel.path}`, {
      // uWS drops a connection without a close frame (1006) when a message passes its own limit:
      // give it headroom and close with 1009 ourselves above the channel's limit.
      maxPayloadLength: wsPayloadCeiling(limit),
      idleTimeout: WS_IDLE_TIMEOUT_S,
      sendPingsAutomatically: true,
      maxBackpressure: SLOW_SOCKET_LIMIT_BYTES,
      closeOnBackpressureLimit: 1,
      upgrade: (res, req, context) => upgrade(kernel, res, req, context, openSockets),
      open: (ws) => {
        openSockets.add(ws);
        const data = ws.getUserData();
        const decision = data.decision!;
        data.decision = undefined;
        data.session = decision.open(wrapSocket(ws));
      },
      message: (ws, message, isBinary) => {
        const data = ws.getUserData();
        if (!data.session || data.closed) return;
        if (message.byteLength > data.maxPayloadBytes) {
          data.closed = true;
          ws.end(1009, 'Message too big');
          return;
        }
        // The message memory is only valid during this call: copy binary, decode text.
        data.session.onMessage(isBinary ? Buffer.from(new Uint8Array(message)) : Buffer.from(message).toString('utf8'), isBinary);
      },
      drain: (ws) => ws.getUserData().session?.onDrain?.(),
      close: (ws, code, message) => {
        openSockets.delete(ws);
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
        // LIBUS_LISTEN_EXCLUSIVE_PORT: without it uWS listens with SO_REUSEPORT, and a second
        // host on a taken port would start silently and split the traffic.
        (app as unknown as { listen(host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void): void }).listen(host, port, EXCLUSIVE_PORT, (socket) => {
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
      edge.stopping = true;
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    async close() {
      edge.stopping = true;
      edge.admission.close();
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      (app as TemplatedApp & { close(): void }).close();
    },
  };
}

interface Edge {
  stopping: boolean;
  admission: Admission;
}

function handleHttp(kernel: Kernel, edge: Edge, res: HttpResponse, req: HttpRequest): void {
  // The request object is only valid during this call: copy what we need first.
  const method = req.getMethod().toUpperCase();
  const path = req.getUrl();
  const query = req.getQuery() ?? '';
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    const seen = headers[name];
    headers[name] = seen === undefined ? value : `${seen}, ${value}`;
  });
  const state: HttpState = { aborted: false, done: false, abort: new LazyAbort() };
  res.onAborted(() => {
    state.aborted = true;
    state.abort.abort();
  });
  const request = new TransportRequest(method, path, query, headers, Buffer.from(res.getRemoteAddressAsText()).toString(), state.abort);
  if (headers['upgrade'] !== undefined && method === 'GET') {
    // A WebSocket upgrade no channel route took: refuse it the way the node transport does.
    void respond(kernel, res, state, request, refusedUpgrade(kernel, request), true);
    return;
  }
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || headers['content-length'] === '0') {
    void respond(kernel, res, state, request, edge.admission.run(request, () => kernel.http.handle(request)), edge.stopping);
    return;
  }
  const limit = kernel.http.bodyLimitFor(method, path);
  const declared = Number(headers['content-length'] ?? NaN);
  const tooLarge = () => void respond(kernel, res, state, request, Promise.resolve(kernel.http.payloadTooLarge(request)), true);
  if (declared > limit + LINGER_MAX_BYTES) {
    // Too much to read through: answer at once (the client may see the connection close first).
    tooLarge();
    return;
  }
  let chunks: Buffer[] = [];
  let size = 0;
  // A lingering close: after the limit is crossed, the rest of the body is read and dropped (up to
  // LINGER_MAX_BYTES, for at most LINGER_MS) before the 413 goes out and the connection closes, so
  // a client still sending sees the 413 and not a reset (EPIPE).
  let refused: { drained: number; timer: NodeJS.Timeout } | null = null;
  let finished = false;
  const refuse = (received: number) => {
    chunks = [];
    refused = { drained: received, timer: setTimeout(finish, LINGER_MS) };
    refused.timer.unref();
  };
  const finish = () => {
    if (!refused || finished) return;
    finished = true;
    clearTimeout(refused.timer);
    tooLarge();
  };
  if (declared > limit) refuse(0);
  res.onData((chunk, isLast) => {
    if (refused) {
      refused.drained += chunk.byteLength;
      if (isLast || refused.drained > limit + LINGER_MAX_BYTES) finish();
      return;
    }
    size += chunk.byteLength;
    if (size > limit) {
      refuse(size);
      if (isLast) finish();
      return;
    }
    // uWS reuses the chunk's memory after this callback: copy it.
    if (chunk.byteLength > 0) chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      chunks = [];
      if (size) request.body = body;
      void respond(kernel, res, state, request, edge.admission.run(request, () => kernel.http.handle(request)), edge.stopping);
    }
  });
}

/** How much of an oversized body is read and dropped, and for how long, before the 413 and the close. */
const LINGER_MAX_BYTES = 16 * 1024 * 1024;
const LINGER_MS = 5_000;

async function refusedUpgrade(kernel: Kernel, request: KernelRequest): Promise<KernelResponse> {
  const decision = await kernel.ws.upgrade({ path: request.path, query: request.query, headers: request.headers, remoteAddress: request.remoteAddress });
  // A channel route would have taken a path that matches: anything here is refused.
  return decision.ok ? { status: 404, headers: { 'content-type': JSON_TYPE }, body: '{"error":"channel_not_found","message":"No WebSocket channel here."}' } : decision.response;
}

async function respond(kernel: Kernel, res: HttpResponse, state: HttpState, request: KernelRequest, pending: Promise<KernelResponse>, closeConnection: boolean): Promise<void> {
  let response: KernelResponse;
  try {
    response = await pending;
  } catch (error) {
    kernel.log.error({ err: error }, 'request handling failed outside the dispatcher');
    response = { status: 500, headers: { 'content-type': JSON_TYPE }, body: internalErrorBody };
  }
  const { body } = response;
  if (state.aborted) {
    if (isStreamBody(body)) await body[Symbol.asyncIterator]().return?.();
    return;
  }
  const head = request.method === 'HEAD';
  if (!isStreamBody(body)) {
    state.done = true;
    res.cork(() => {
      writeHead(res, response);
      if (head || response.status === 204 || response.status === 304) {
        // In this uWS build endWithoutBody(length) leaves the response pending and stalls the
        // keep-alive connection, and an explicit `undefined` length is read as garbage: write
        // the length by hand, call it without arguments, and let `connection: close` ask the
        // client to hang up when the connection should end.
        if (head && response.status !== 204 && response.status !== 304) res.writeHeader('content-length', String(byteLength(body)));
        if (closeConnection) res.writeHeader('connection', 'close');
        res.endWithoutBody();
      } else {
        res.end(body ?? EMPTY, closeConnection);
      }
    });
    return;
  }
  const iterator = body[Symbol.asyncIterator]();
  if (head) {
    // A HEAD of a stream: the head only; the producer is stopped before it runs.
    state.done = true;
    res.cork(() => {
      writeHead(res, response);
      if (closeConnection) res.writeHeader('connection', 'close');
      res.endWithoutBody();
    });
    await iterator.return?.();
    return;
  }
  res.cork(() => writeHead(res, response));
  await new StreamPump(res, state, closeConnection).run(iterator);
}

const statusLines = new Map<number, string>();

function writeHead(res: HttpResponse, response: KernelResponse): void {
  let line = statusLines.get(response.status);
  if (line === undefined) statusLines.set(response.status, (line = `${response.status} ${STATUS_CODES[response.status] ?? ''}`));
  res.writeStatus(line);
  for (const name in response.headers) {
    // uWS writes its own framing headers.
    if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection') res.writeHeader(name, response.headers[name]!);
  }
}

function byteLength(body: KernelResponse['body']): number {
  if (body === null) return 0;
  return typeof body === 'string' ? Buffer.byteLength(body) : (body as Uint8Array).byteLength;
}

/**
 * Writes a stream with back-pressure, the way this uWS build is fast:
 * - what the producer yields within one tick is joined and written once, inside `res.cork`, at
 *   most `MAX_WRITE_BYTES` per write (the rest goes out in the next ticks);
 * - the producer runs ahead by at most `STREAM_HIGH_WATER` bytes;
 * - when uWS reports back-pressure (`write` returns false) nothing more is written until
 *   `onWritable`. uWS does not drain its own buffer while an `onWritable` handler is registered,
 *   so the handler always writes (or uncorks an empty cork, which flushes that buffer);
 * - when the client goes away the producer is stopped (`return()`).
 */
export class StreamPump {
  private queue: Buffer[] = [];
  private queued = 0;
  private blocked = false;
  private scheduled = false;
  private writableHandler = false;
  private waiter: (() => void) | undefined;

  constructor(
    private readonly res: HttpResponse,
    private readonly state: HttpState,
    private readonly closeConnection: boolean,
  ) {}

  async run(iterator: AsyncIterator<string | Uint8Array>): Promise<void> {
    const onAbort = () => this.wake();
    this.state.abort.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        while (!this.state.aborted && this.queued >= STREAM_HIGH_WATER) await this.wait();
        if (this.state.aborted) break;
        const step = await iterator.next();
        if (step.done || this.state.aborted) break;
        const chunk = toBuffer(step.value);
        if (chunk.length === 0) continue;
        this.queue.push(chunk);
        this.queued += chunk.length;
        this.schedule();
      }
      while (!this.state.aborted && this.queued > 0) await this.wait();
      if (!this.state.aborted) {
        this.state.done = true;
        this.res.cork(() => this.res.end(EMPTY, this.closeConnection));
      }
    } catch {
      // The producer failed after the head went out: cut the connection so the client sees the
      // body end early instead of a clean end.
      if (!this.state.aborted && !this.state.done) {
        this.state.done = true;
        this.res.close();
      }
    } finally {
      this.state.abort.signal.removeEventListener('abort', onAbort);
      await iterator.return?.();
    }
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => (this.waiter = resolve));
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  private schedule(): void {
    if (this.scheduled || this.blocked) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.state.aborted || this.state.done || this.blocked || this.queued === 0) return;
    this.writePiece();
    if (!this.blocked && this.queued > 0) this.schedule();
    this.wake();
  };

  /** Writes up to MAX_WRITE_BYTES of the queue in one corked write. */
  private writePiece(): void {
    const piece = this.take(MAX_WRITE_BYTES);
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(piece);
    });
    if (!ok) {
      this.blocked = true;
      if (!this.writableHandler) {
        this.writableHandler = true;
        this.res.onWritable(() => this.onWritable());
      }
    }
  }

  private onWritable(): boolean {
    if (this.state.aborted || this.state.done || !this.blocked) return true;
    this.blocked = false;
    if (this.queued > 0) this.writePiece();
    // Nothing queued: an empty cork still pushes out what uWS holds (and re-arms this handler
    // when it could not push everything, so the next write learns about it).
    else this.res.cork(() => undefined);
    if (!this.blocked && this.queued > 0) this.schedule();
    this.wake();
    return !this.blocked;
  }

  /** Removes and returns up to `max` bytes from the front of the queue (one splice per call). */
  private take(max: number): Buffer {
    const parts: Buffer[] = [];
    let size = 0;
    let used = 0;
    while (used < this.queue.length && size < max) {
      const next = this.queue[used]!;
      const room = max - size;
      if (next.length <= room) {
        parts.push(next);
        size += next.length;
        used++;
      } else {
        parts.push(next.subarray(0, room));
        this.queue[used] = next.subarray(room);
        size += room;
      }
    }
    this.queue.splice(0, used);
    this.queued -= size;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
  }
}

function upgrade(kernel: Kernel, res: HttpResponse, req: HttpRequest, context: unknown, openSockets: ReadonlySet<WebSocket<SocketData>>): void {
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
    .catch((): UpgradeDecision => ({ ok: false, response: { status: 500, headers: { 'content-type': JSON_TYPE }, body: internalErrorBody } }))
    .then((decision) => {
      if (aborted) return;
      if (!decision.ok) {
        res.cork(() => {
          writeHead(res, decision.response);
          res.end(typeof decision.response.body === 'string' ? decision.response.body : EMPTY, true);
        });
        return;
      }
      // Not in a cork of `res` alone: uWS's own can close a WebSocket upgraded inside it (see upgradeAfterDecision).
      upgradeAfterDecision<SocketData>(res, { decision, maxPayloadBytes: decision.maxPayloadBytes, closed: false }, secKey, secProtocol, secExtensions, context as never, anyOpen(openSockets));
    });
}

function anyOpen<T>(set: ReadonlySet<T>): T | undefined {
  for (const item of set) return item;
  return undefined;
}

function wrapSocket(ws: WebSocket<SocketData>): SocketLike {
  const data = ws.getUserData();
  const remoteAddress = Buffer.from(ws.getRemoteAddressAsText()).toString();
  return {
    send(message, isBinary = typeof message !== 'string') {
      if (data.closed) return false;
      // 1: sent; 0: buffered (slow peer); 2: dropped (over maxBackpressure; the socket closes).
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
    cork(callback) {
      // Outside uWS's own callbacks every send is a system call; corked sends leave as one write.
      if (data.closed) callback();
      else ws.cork(callback);
    },
    remoteAddress,
  };
}
