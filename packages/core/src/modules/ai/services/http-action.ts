import { TrellisError } from '../../../kernel/errors.js';
import { parseResponseBody, sendGuardedRequest, type GuardedRequestFailures } from '../../../kernel/net/guarded-request.js';
import type { NetworkGuard } from '../../../kernel/net/network-guard.js';
import { lookupPath, renderJson, renderText } from './template.js';

export interface HttpActionConf {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  response?: { path?: string };
}

/**
 * The URL of an http action: placeholders are URL-encoded, but for one that starts the URL (a base
 * URL given as an argument, `{{baseUrl}}/items`), which is inserted as it is. The result must still
 * be an http(s) URL, and the network guard checks where it goes.
 */
export function renderUrl(template: string, context: Record<string, unknown>): string {
  const leading = /^\{\{\s*([A-Za-z0-9_$.-]+)\s*\}\}/.exec(template);
  if (!leading) return renderText(template, context, encodeURIComponent);
  const base = lookupPath(context, leading[1]!);
  return `${base === undefined || base === null ? '' : String(base)}${renderText(template.slice(leading[0].length), context, encodeURIComponent)}`;
}

export const httpMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export const toolCallFailed = (message: string, cause?: unknown) =>
  new TrellisError('unavailable', 'tool_call_failed', message, { cause, status: 502, expose: true });

export interface HttpCallOptions {
  /** The server's network guard: every connection of the call goes through it. */
  guard: NetworkGuard;
  timeoutMs: number;
  maxResponseBytes: number;
  signal?: AbortSignal;
  /** Sent as `Idempotency-Key` (unless the action sets that header itself): the same on every attempt of a run's call. */
  idempotencyKey?: string;
}

/**
 * Runs one templated HTTP request: URL, headers and body rendered from `context`, redirects not
 * followed, every connection checked by the network guard, the body read up to a limit. The result is the
 * JSON body (or the text of a non-JSON one), narrowed by `response.path` when set. A non-2xx status
 * fails with `tool_call_failed`.
 */
export async function runHttpAction(conf: HttpActionConf, context: Record<string, unknown>, options: HttpCallOptions): Promise<unknown> {
  const url = new URL(renderUrl(conf.url, context));
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TrellisError('bad_request', 'invalid_tool_action', 'An http action URL must be http or https.');
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(conf.headers ?? {})) headers[key.toLowerCase()] = renderText(value, context).replace(/[\r\n]/g, ' ');
  let payload: Buffer | undefined;
  if (conf.body !== undefined && conf.method !== 'GET' && conf.method !== 'HEAD') {
    const rendered = renderJson(conf.body, context);
    payload = Buffer.from(typeof rendered === 'string' ? rendered : JSON.stringify(rendered));
    headers['content-type'] ??= typeof rendered === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  }
  headers['accept'] ??= 'application/json, text/plain;q=0.9, */*;q=0.1';
  headers['user-agent'] ??= 'trellis-tool/1';
  if (options.idempotencyKey) headers['idempotency-key'] ??= options.idempotencyKey;
  const timeoutMs = Math.min(conf.timeoutMs ?? options.timeoutMs, options.timeoutMs);
  const { status, contentType, body } = await sendGuardedRequest(
    { method: conf.method, url, headers, body: payload },
    { guard: options.guard, timeoutMs, maxResponseBytes: options.maxResponseBytes, signal: options.signal, failures: toolCallFailures },
  );
  const parsed = parseResponseBody(contentType, body);
  if (status < 200 || status >= 300) {
    throw toolCallFailed(`The tool's endpoint answered ${status}.`);
  }
  return conf.response?.path ? (lookupPath(parsed, conf.response.path) ?? null) : parsed;
}

/** The guard's refusal, under the code tool actions have always answered. */
export const toolDestinationRefused = (refused: TrellisError) =>
  new TrellisError('bad_request', 'tool_destination_refused', `The tool action may not reach its destination. ${refused.message}`, { cause: refused });

/** A tool action's failures: all `tool_call_failed` but a refused destination. */
const toolCallFailures: GuardedRequestFailures = {
  refused: toolDestinationRefused,
  timedOut: (timeoutMs, cause) => toolCallFailed(`The tool did not answer within ${timeoutMs} ms.`, cause),
  unreachable: (code, cause) => toolCallFailed(`The tool's endpoint cannot be reached${code ? ` (${code})` : ''}.`, cause),
  tooLarge: (limit) => toolCallFailed(`The tool's response is larger than ai.tools.maxResponseBytes (${limit} bytes).`),
};
