import http from 'node:http';
import https from 'node:https';
import { TrellisError } from '../../../kernel/errors.js';
import { isIP } from 'node:net';
import { assertPublicHost, guardedLookup } from './network-guard.js';
import { lookupPath, renderJson, renderText } from './template.js';

export interface HttpActionConf {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  response?: { path?: string };
}

export const httpMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export const toolCallFailed = (message: string, cause?: unknown) =>
  new TrellisError('unavailable', 'tool_call_failed', message, { cause, status: 502, expose: true });

export interface HttpCallOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
  signal?: AbortSignal;
}

/**
 * Runs one templated HTTP request: URL, headers and body rendered from `context`, redirects not
 * followed, the destination checked at connect time, the body read up to a limit. The result is the
 * JSON body (or the text of a non-JSON one), narrowed by `response.path` when set. A non-2xx status
 * fails with `tool_call_failed`.
 */
export async function runHttpAction(conf: HttpActionConf, context: Record<string, unknown>, options: HttpCallOptions): Promise<unknown> {
  const url = new URL(renderText(conf.url, context, encodeURIComponent));
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TrellisError('bad_request', 'invalid_tool_action', 'An http action URL must be http or https.');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // Node connects to an address literal without calling the lookup hook: check it here.
  if (isIP(host)) await assertPublicHost(host, options.allowPrivate);
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
  const timeoutMs = Math.min(conf.timeoutMs ?? options.timeoutMs, options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);

  const { status, contentType, body } = await new Promise<{ status: number; contentType: string; body: Buffer }>((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, { method: conf.method, headers, lookup: guardedLookup(options.allowPrivate) as never, signal }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxResponseBytes) {
          request.destroy();
          reject(toolCallFailed(`The tool's response is larger than ai.tools.maxResponseBytes (${options.maxResponseBytes} bytes).`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, contentType: String(response.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', (error) => {
      if (error instanceof TrellisError) reject(error);
      else if (signal.aborted && !options.signal?.aborted) reject(toolCallFailed(`The tool did not answer within ${timeoutMs} ms.`, error));
      else if (options.signal?.aborted) reject(options.signal.reason ?? error);
      else reject(toolCallFailed(`The tool's endpoint cannot be reached (${(error as NodeJS.ErrnoException).code ?? error.message}).`, error));
    });
    request.end(payload);
  });

  let parsed: unknown = body.toString('utf8');
  if (/json/i.test(contentType) && body.length > 0) {
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      /* answered as text */
    }
  }
  if (status < 200 || status >= 300) {
    throw toolCallFailed(`The tool's endpoint answered ${status}.`);
  }
  return conf.response?.path ? (lookupPath(parsed, conf.response.path) ?? null) : parsed;
}
