import { aiErrors, TrellisError, type AiStreamPart } from '@trellis/core';

/** How an adapter retries a failed call before the first part reached the caller. */
export interface RetryPolicy {
  /** Retries after the first attempt (default 2). */
  maxRetries: number;
  /** First backoff delay, doubled on every retry (default 1,000 ms). */
  baseDelayMs: number;
  /**
   * The longest wait an adapter accepts: a `retry-after` longer than this is not waited for, the
   * `ai_rate_limited` error goes to the caller at once with its `retry_after` (default 20,000 ms).
   */
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 2, baseDelayMs: 1000, maxDelayMs: 20_000 };

/** Options every Trellis AI adapter takes (none is needed in production). */
export interface AiAdapterOptions {
  /**
   * The fetch the SDK uses (tests, proxies). It replaces the one the caller passes in each request
   * (`request.fetch`: the server's network guard), so a fetch given here must do its own checking.
   * Default: `request.fetch`, else the global fetch.
   */
  fetch?: typeof globalThis.fetch;
  /** Retry policy; `conf.maxRetries` overrides `maxRetries` per model. */
  retry?: Partial<RetryPolicy>;
}

/** The error an aborted call throws: the signal's reason, or an `AbortError`. */
export const abortReason = (signal: AbortSignal | undefined): unknown =>
  signal?.reason ?? Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' });

export const isAbortError = (error: unknown): boolean =>
  error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError' || error.name === 'ResponseAborted');

/**
 * Seconds to wait from a response's rate-limit headers: `retry-after-ms`, `retry-after` (seconds
 * or an HTTP date), or Anthropic's `anthropic-ratelimit-*-reset` (RFC 3339 instants). `null` when
 * none says.
 */
export function retryAfterSeconds(headers: Record<string, string | undefined> | Headers | undefined, now = Date.now()): number | null {
  if (!headers) return null;
  const get = (name: string): string | undefined => {
    // Any Fetch API `Headers` (the global one, or undici's when the network guard's fetch made the
    // request: a different class, so `instanceof Headers` would miss it).
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
    const record = headers as Record<string, string | undefined>;
    return record[name] ?? record[name.toLowerCase()];
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number.parseFloat(ms))) return Math.max(0, Number.parseFloat(ms) / 1000);
  const after = get('retry-after');
  if (after !== undefined) {
    const seconds = Number(after);
    if (after.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds);
    const at = Date.parse(after);
    if (Number.isFinite(at)) return Math.max(0, (at - now) / 1000);
  }
  const resets = ['anthropic-ratelimit-requests-reset', 'anthropic-ratelimit-tokens-reset', 'anthropic-ratelimit-input-tokens-reset', 'anthropic-ratelimit-output-tokens-reset']
    .map((name) => get(name))
    .filter((value): value is string => value !== undefined)
    .map((value) => Date.parse(value))
    .filter((at) => Number.isFinite(at));
  if (resets.length) return Math.max(0, (Math.max(...resets) - now) / 1000);
  return null;
}

/**
 * The AI error for an HTTP failure of a provider: 401/403 `ai_auth_failed`, 429 `ai_rate_limited`
 * (with the wait the headers give), 408/409 and 5xx `ai_unavailable`, other 4xx `ai_bad_request`
 * with the vendor's message.
 */
export function aiErrorFromStatus(
  status: number,
  input: { vendor: string; message?: string; headers?: Record<string, string | undefined> | Headers; cause?: unknown },
): TrellisError {
  const detail = input.message ? `: ${input.message}` : '.';
  const vendor = input.vendor.charAt(0).toUpperCase() + input.vendor.slice(1);
  if (status === 401 || status === 403) return aiErrors.authFailed(`${vendor} refused the credentials configured for this model (HTTP ${status}).`, input.cause);
  if (status === 429) return aiErrors.rateLimited(retryAfterSeconds(input.headers), `${vendor} is rate limiting requests${detail}`, input.cause);
  if (status === 408 || status === 409 || status >= 500) return aiErrors.unavailable(`${vendor} is unavailable (HTTP ${status})${detail}`, input.cause);
  return aiErrors.badRequest(`${vendor} refused the request (HTTP ${status})${detail}`, input.cause);
}

const retryableCodes = new Set(['ai_rate_limited', 'ai_unavailable']);

/** The wait before retry number `retry` (0-based), or `null` when the error must not be retried. */
export function retryDelayMs(error: unknown, retry: number, policy: RetryPolicy): number | null {
  if (!(error instanceof TrellisError) || !retryableCodes.has(error.code) || retry >= policy.maxRetries) return null;
  if ((error as TrellisError & { noRetry?: boolean }).noRetry) return null;
  const retryAfter = error.extra?.retry_after;
  if (typeof retryAfter === 'number') {
    const wait = retryAfter * 1000;
    return wait > policy.maxDelayMs ? null : wait;
  }
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
}

/** Marks an error as final (a stream cut after data, ...): the retry loop passes it on. */
export const final = <E extends TrellisError>(error: E): E => Object.assign(error, { noRetry: true });

const sleep = (ms: number, signal: AbortSignal | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Runs `attempt` and yields its parts. A failure before the first part is mapped by `mapError`
 * and retried with backoff (honouring `retry-after`) while the policy allows; a failure after a
 * part was yielded goes to the caller as is. An abort is rethrown as the signal's reason.
 */
export async function* streamWithRetries(
  attempt: (retry: number) => AsyncIterable<AiStreamPart>,
  options: { policy: RetryPolicy; signal?: AbortSignal; mapError: (error: unknown) => unknown },
): AsyncGenerator<AiStreamPart> {
  for (let retry = 0; ; retry += 1) {
    let yielded = false;
    try {
      for await (const part of attempt(retry)) {
        yielded = true;
        yield part;
      }
      return;
    } catch (error) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      if (isAbortError(error)) throw error;
      const mapped = options.mapError(error);
      const wait = yielded ? null : retryDelayMs(mapped, retry, options.policy);
      if (wait === null) throw mapped;
      await sleep(wait, options.signal);
    }
  }
}

/** The same retry loop for a single call (embeddings, non-streamed requests). */
export async function callWithRetries<T>(call: (retry: number) => Promise<T>, options: { policy: RetryPolicy; signal?: AbortSignal; mapError: (error: unknown) => unknown }): Promise<T> {
  for (let retry = 0; ; retry += 1) {
    try {
      return await call(retry);
    } catch (error) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      if (isAbortError(error)) throw error;
      const mapped = options.mapError(error);
      const wait = retryDelayMs(mapped, retry, options.policy);
      if (wait === null) throw mapped;
      await sleep(wait, options.signal);
    }
  }
}
