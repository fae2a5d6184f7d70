import { TrellisError } from '../errors.js';
import { refusalOf, type NetworkGuard } from './network-guard.js';

/** One outbound HTTP request, already rendered. */
export interface GuardedRequest {
  method: string;
  url: URL;
  /** Lower-case names; values without line breaks. */
  headers: Record<string, string>;
  body?: Buffer;
}

/** The answer: status, content type and the whole body (at most `maxResponseBytes`). */
export interface GuardedResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

/** How the caller names each failure (a tool action and an http block answer their own codes). */
export interface GuardedRequestFailures {
  /** The network guard refused a connection (`refusal` is its `destination_refused`). */
  refused(refusal: TrellisError): Error;
  /** No answer within `timeoutMs`. */
  timedOut(timeoutMs: number, cause: unknown): Error;
  /** The connection failed (`code`: the system's, such as `ECONNREFUSED`, when known). */
  unreachable(code: string | undefined, cause: unknown): Error;
  /** The body passed `limit` bytes (the rest is not read). */
  tooLarge(limit: number): Error;
}

export interface GuardedRequestOptions {
  /** The server's network guard: every connection of the request goes through it. */
  guard: NetworkGuard;
  timeoutMs: number;
  maxResponseBytes: number;
  /** The caller's stop (a run's cancel or timeout): its reason is thrown as it is. */
  signal?: AbortSignal;
  failures: GuardedRequestFailures;
}

/**
 * Sends one request the server makes on a user's behalf (an AI tool's `http` action, a workflow's
 * http block): through the network guard's dispatcher (every connection checked when it opens),
 * redirects not followed, bounded by `timeoutMs`, the body read up to `maxResponseBytes`. Any
 * status is answered; the caller decides what a non-2xx one means.
 */
export async function sendGuardedRequest(request: GuardedRequest, options: GuardedRequestOptions): Promise<GuardedResponse> {
  const { failures, timeoutMs } = options;
  const signal = options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
  try {
    const response = await options.guard.fetch(request.url, { method: request.method, headers: request.headers, body: request.body, signal, redirect: 'manual' });
    const body = await readLimited(response, options.maxResponseBytes, failures);
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', body };
  } catch (error) {
    const refused = refusalOf(error);
    if (refused) throw failures.refused(refused);
    if (error instanceof TrellisError) throw error;
    if (options.signal?.aborted) throw options.signal.reason ?? error;
    if (signal.aborted) throw failures.timedOut(timeoutMs, error);
    throw failures.unreachable((error as { cause?: { code?: string } }).cause?.code, error);
  }
}

/** A body as JSON when its content type says so and it parses, else as UTF-8 text. */
export function parseResponseBody(contentType: string, body: Buffer): unknown {
  const text = body.toString('utf8');
  if (/json/i.test(contentType) && body.length > 0) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      /* answered as text */
    }
  }
  return text;
}

/** The body, failing with `failures.tooLarge` past `limit` bytes (the rest is not read). */
async function readLimited(response: Response, limit: number, failures: GuardedRequestFailures): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw failures.tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
