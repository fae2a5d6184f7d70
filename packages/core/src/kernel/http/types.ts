/**
 * The transport-free HTTP contract. A transport (uWebSockets.js, node:http, an embedding in
 * Express or Fastify) turns its request into a `KernelRequest`, awaits `kernel.http.handle`, and
 * writes the `KernelResponse` back, streaming `body` when it is an async iterable.
 */
export interface KernelRequest {
  /** Upper-case method. */
  method: string;
  /** Path without the query string and without any mount prefix, starting with `/`. */
  path: string;
  /** Raw query string without the leading `?` (may be empty). */
  query: string;
  /** Header names in lower case. Repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The whole body, already limited to `maxBodyBytes` by the transport. */
  body?: Uint8Array;
  /** Peer address as the socket reports it. */
  remoteAddress: string;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
}

export type ResponseBody = string | Uint8Array | AsyncIterable<string | Uint8Array> | null;

export interface KernelResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: ResponseBody;
}

export const isStreamBody = (body: ResponseBody): body is AsyncIterable<string | Uint8Array> =>
  body !== null && typeof body === 'object' && Symbol.asyncIterator in body;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
