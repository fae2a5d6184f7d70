import type { IncomingMessage, ServerResponse } from 'node:http';
import { isStreamBody, type Kernel, type KernelRequest, type KernelResponse } from '@trellis/core';

export interface NodeHandlerOptions {
  /**
   * Mount prefix to strip from the URL (`/api`). Leave it out when the framework already strips
   * it (Express `app.use('/api', handler)` does).
   */
  prefix?: string;
}

export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/**
 * Trellis as a `node:http` request handler, for a plain server or for mounting in Express,
 * Fastify (via `@fastify/middie` or a raw route) or Nest. Requests outside the prefix go to `next`
 * when there is one, else get 404.
 */
export function toNodeHandler(kernel: Kernel, options: NodeHandlerOptions = {}): NodeHandler {
  const prefix = normalisePrefix(options.prefix);
  return (req, res, next) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q === -1 ? url : url.slice(0, q);
    if (prefix) {
      if (path !== prefix && !path.startsWith(`${prefix}/`)) {
        if (next) return next();
        res.writeHead(404).end();
        return;
      }
      path = path.slice(prefix.length) || '/';
    }
    void handleNodeRequest(kernel, req, res, path, q === -1 ? '' : url.slice(q + 1));
  };
}

async function handleNodeRequest(kernel: Kernel, req: IncomingMessage, res: ServerResponse, path: string, query: string): Promise<void> {
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const headers = flattenHeaders(req);
  const base: Omit<KernelRequest, 'body'> = {
    method: (req.method ?? 'GET').toUpperCase(),
    path,
    query,
    headers,
    remoteAddress: req.socket.remoteAddress ?? '',
    signal: abort.signal,
  };
  let response: KernelResponse;
  try {
    const body = await readBody(req, kernel.http.bodyLimitFor(base.method, path));
    response = body === 'too_large' ? kernel.http.payloadTooLarge(base) : await kernel.http.handle({ ...base, body });
  } catch (error) {
    // The client went away mid-body, or the socket failed: nothing left to answer.
    if (!res.headersSent) res.destroy(error as Error);
    return;
  }
  await writeNodeResponse(res, response, abort.signal);
}

/** Reads the body up to `limit` bytes; a larger one (declared or sent) is `'too_large'`. */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined | 'too_large'> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    req.resume();
    return Promise.resolve('too_large');
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        chunks.length = 0;
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(size === 0 ? undefined : Buffer.concat(chunks, size));
    });
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

export async function writeNodeResponse(res: ServerResponse, response: KernelResponse, signal: AbortSignal): Promise<void> {
  const { body } = response;
  if (!isStreamBody(body)) {
    const payload = body ?? '';
    res.writeHead(response.status, { ...response.headers, 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
    return;
  }
  res.writeHead(response.status, response.headers);
  res.flushHeaders();
  const iterator = body[Symbol.asyncIterator]();
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
    res.end();
  } catch {
    // The stream failed after headers went out: cut the response so the client sees it end early.
    res.destroy();
  } finally {
    signal.removeEventListener('abort', stop);
    await iterator.return?.();
  }
}

export function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function normalisePrefix(prefix: string | undefined): string {
  if (!prefix || prefix === '/') return '';
  const withSlash = prefix.startsWith('/') ? prefix : `/${prefix}`;
  return withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}
