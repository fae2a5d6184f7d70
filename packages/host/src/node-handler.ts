import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isStreamBody, type Kernel, type KernelResponse } from '@trellis/core';
import { Admission } from './admission.js';
import { internalErrorBody, JSON_TYPE, LazyAbort, TransportRequest } from './shared.js';

export interface NodeHandlerOptions {
  /**
   * Mount prefix to strip from the URL (`/api`). Leave it out when the framework already strips
   * it (Express `app.use('/api', handler)` does), or when the kernel has `server.basePath` set:
   * then the handler claims the paths under the base path and leaves the stripping to the kernel.
   */
  prefix?: string;
  /**
   * The admission control requests pass (`server.admission`); one is made from the kernel's
   * configuration when left out.
   */
  admission?: Admission;
}

export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/**
 * Trellis as a `node:http` request handler, for a plain server or for mounting in Express,
 * Fastify or Nest. Requests outside the prefix go to `next` when there is one, else get 404.
 *
 * The handler reads the request body itself. When a framework's body parser already consumed it
 * (`express.json()` mounted in front), the parsed `req.body` (or a `req.rawBody` buffer) is used
 * instead; mounting Trellis before any body parser is still the better choice.
 */
export function toNodeHandler(kernel: Kernel, options: NodeHandlerOptions = {}): NodeHandler {
  const prefix = normalisePrefix(options.prefix);
  // Without a prefix to strip, a kernel with `server.basePath` still only claims its own paths
  // (it strips the base path itself).
  const claimed = prefix || kernel.http.basePath;
  const admission = options.admission ?? new Admission(kernel);
  return (req, res, next) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q === -1 ? url : url.slice(0, q);
    if (claimed) {
      if (path !== claimed && !path.startsWith(`${claimed}/`)) {
        if (next) return next();
        const body = `{"error":"route_not_found","message":"No route matches ${jsonEscape(`${req.method ?? 'GET'} ${path}`)}."}`;
        res.writeHead(404, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body), 'x-request-id': randomUUID() }).end(body);
        return;
      }
      if (prefix) path = path.slice(prefix.length) || '/';
    }
    handleNodeRequest(kernel, admission, req, res, path, q === -1 ? '' : url.slice(q + 1)).catch((error: unknown) => {
      kernel.log.error({ err: error }, 'request handling failed outside the dispatcher');
      if (!res.headersSent) res.writeHead(500, { 'content-type': JSON_TYPE }).end(internalErrorBody);
      else res.destroy();
    });
  };
}

async function handleNodeRequest(kernel: Kernel, admission: Admission, req: IncomingMessage, res: ServerResponse, path: string, query: string): Promise<void> {
  const abort = new LazyAbort();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const request = new TransportRequest((req.method ?? 'GET').toUpperCase(), path, query, flattenHeaders(req), req.socket.remoteAddress ?? '', abort);
  let body: Uint8Array | undefined | 'too_large';
  try {
    body = await readBody(req, kernel.http.bodyLimitFor(request.method, path));
  } catch {
    // The client went away mid-body: nothing left to answer.
    if (!res.headersSent) res.destroy();
    return;
  }
  if (body === 'too_large') {
    // The rest of the body is not read: close the connection instead of draining it.
    res.shouldKeepAlive = false;
    await writeNodeResponse(res, kernel.http.payloadTooLarge(request), abort, request.method);
    return;
  }
  request.body = body;
  const response = await admission.run(request, () => kernel.http.handle(request));
  await writeNodeResponse(res, response, abort, request.method);
}

/** Reads the body up to `limit` bytes; a larger one (declared or sent) is `'too_large'`. */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined | 'too_large'> {
  if (req.readableEnded) return Promise.resolve(consumedBody(req, limit));
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    // Discarded, not buffered; the connection closes after the 413.
    req.resume();
    return Promise.resolve('too_large');
  }
  // Node discards an unread body itself once the response is finished.
  if (req.method === 'GET' || req.method === 'HEAD' || declared === 0) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        req.resume();
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(size === 0 ? undefined : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new Error('request aborted'));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    req.on('error', onError);
  });
}

/**
 * The body of a request whose stream a framework already read: its raw bytes when it kept them,
 * else its parsed body turned back into the bytes of its content type.
 */
function consumedBody(req: IncomingMessage, limit: number): Uint8Array | undefined | 'too_large' {
  const carrier = req as IncomingMessage & { rawBody?: unknown; body?: unknown };
  let bytes: Buffer | undefined;
  if (Buffer.isBuffer(carrier.rawBody)) bytes = carrier.rawBody;
  else if (Buffer.isBuffer(carrier.body)) bytes = carrier.body;
  else if (typeof carrier.body === 'string') bytes = Buffer.from(carrier.body);
  else if (carrier.body !== undefined && carrier.body !== null && typeof carrier.body === 'object') {
    const type = String(req.headers['content-type'] ?? '');
    if (type.includes('application/x-www-form-urlencoded')) {
      bytes = Buffer.from(new URLSearchParams(carrier.body as Record<string, string>).toString());
    } else if (Object.keys(carrier.body).length > 0 || type.includes('json')) {
      bytes = Buffer.from(JSON.stringify(carrier.body));
    }
  }
  if (!bytes || bytes.length === 0) return undefined;
  return bytes.length > limit ? 'too_large' : bytes;
}

/**
 * Writes a kernel response: a whole body with its length, or a stream with back-pressure that is
 * stopped (`return()`) when the client goes away. HEAD gets the head only.
 */
export async function writeNodeResponse(res: ServerResponse, response: KernelResponse, abort: LazyAbort, method = 'GET'): Promise<void> {
  const { body } = response;
  const bodiless = response.status === 204 || response.status === 304;
  if (!isStreamBody(body)) {
    const payload = body ?? '';
    const headers: Record<string, string | number> = { ...response.headers };
    if (!bodiless) headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.byteLength;
    res.writeHead(response.status, headers);
    // Node leaves the body out of a HEAD response by itself.
    res.end(bodiless ? undefined : payload);
    return;
  }
  const iterator = body[Symbol.asyncIterator]();
  if (method === 'HEAD' || abort.aborted) {
    if (!abort.aborted) res.writeHead(response.status, response.headers).end();
    await iterator.return?.();
    return;
  }
  const signal = abort.signal;
  res.writeHead(response.status, response.headers);
  res.flushHeaders();
  const stop = () => void iterator.return?.();
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const step = await iterator.next();
      if (step.done || signal.aborted) break;
      if (!res.write(step.value)) {
        // Back-pressure: wait until the socket drains (or the client goes away).
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      }
    }
    if (!signal.aborted) res.end();
  } catch {
    // The stream failed after the head went out: cut the response so the client sees it end early.
    res.destroy();
  } finally {
    signal.removeEventListener('abort', stop);
    await iterator.return?.();
  }
}

export function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = req.headers;
  for (const name in raw) {
    const value = raw[name];
    if (value === undefined) continue;
    out[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return out;
}

function jsonEscape(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

export function normalisePrefix(prefix: string | undefined): string {
  if (!prefix || prefix === '/') return '';
  const withSlash = prefix.startsWith('/') ? prefix : `/${prefix}`;
  return withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}
