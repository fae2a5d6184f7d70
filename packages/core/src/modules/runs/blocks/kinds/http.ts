import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../../kernel/errors.js';
import { parseResponseBody, sendGuardedRequest, type GuardedRequestFailures } from '../../../../kernel/net/guarded-request.js';
import { networkGuardServiceIdentifier, type NetworkGuard } from '../../../../kernel/net/network-guard.js';
import { aiConfigServiceIdentifier } from '../../../ai/index.js';
import { blockToolCallKey } from '../../services/tool-effects.js';
import { attrIssue } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import { defineBlockKind, type AttrIssue } from '../kind.js';
import { renderDeep, renderTemplate } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';

export const httpBlockMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
export const httpResponseTypes = ['auto', 'json', 'text'] as const;

export const HttpAttrs = Type.Object({
  /** Default POST. */
  method: Type.Optional(Type.Union(httpBlockMethods.map((m) => Type.Literal(m)), attrIssue('isIn', `must be one of ${httpBlockMethods.join(', ')}`))),
  /** A template; a reference that starts it (`{{ toolUrl }}/items`) is inserted as it is, the others URL-encoded. */
  url: Type.String({ minLength: 1, ...attrIssue('required', 'an http block needs a url (an http(s) URL or a template such as {{ toolUrl }}/items)') }),
  /** Header values are templates. */
  headers: Type.Optional(Type.Record(Type.String(), Type.String(), attrIssue('isObject', 'must be an object of header names to strings (templates)'))),
  /** JSON; strings inside are templates. A string body is sent as text, anything else as JSON. */
  body: Type.Optional(Type.Unknown()),
  /** How the answer's body is read: `auto` (JSON when its content type says so, else text), `json`, `text`. */
  responseType: Type.Optional(Type.Union(httpResponseTypes.map((t) => Type.Literal(t)), attrIssue('isIn', `must be one of ${httpResponseTypes.join(', ')}`))),
});
export type HttpAttrs = Static<typeof HttpAttrs>;

/** The limits of one request (ai.tools.timeoutMs and ai.tools.maxResponseBytes, shared with `http` tool actions). */
export interface HttpBlockLimits {
  timeoutMs: number;
  maxResponseBytes: number;
}

/** The defaults of ai.tools.timeoutMs and ai.tools.maxResponseBytes, for a deployment without the ai module. */
const defaultLimits: HttpBlockLimits = { timeoutMs: 30_000, maxResponseBytes: 1_048_576 };

/** What a `tool_result` of an http block holds and what the block outputs. */
export interface HttpBlockResult {
  status: number;
  body: unknown;
}

const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Checks the schema cannot state: a literal URL that is not http(s), a header name HTTP refuses. */
function checkHttpAttrs(attrs: Readonly<Record<string, unknown>>): AttrIssue[] {
  const issues: AttrIssue[] = [];
  if (typeof attrs.url === 'string' && attrs.url && !attrs.url.includes('{{') && !isHttpUrl(attrs.url)) {
    issues.push({ field: 'url', constraint: 'isUrl', message: 'must be an http or https URL (or a template)' });
  }
  if (attrs.headers && typeof attrs.headers === 'object' && !Array.isArray(attrs.headers)) {
    const bad = Object.keys(attrs.headers).find((name) => !headerName.test(name));
    if (bad !== undefined) issues.push({ field: 'headers', constraint: 'isHeaderName', message: `"${bad}" is not an HTTP header name` });
  }
  return issues;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

const LEADING = /^\s*\{\{[^}]*\}\}/;

/**
 * The block's URL: its references are URL-encoded, but for one that starts the URL (a base URL from
 * an input, `{{ toolUrl }}/echo`), which is inserted as it is (as in `http` tool actions).
 */
export function renderHttpUrl(template: string, ctx: ReadonlyMap<string, unknown>): string {
  const leading = LEADING.exec(template);
  const head = leading ? renderTemplate(leading[0].trim(), ctx) : '';
  return head + renderTemplate(template.slice(leading ? leading[0].length : 0), ctx, encodeURIComponent);
}

/** The failures of an http block's request, under the block's codes (docs/errors.md). */
const httpBlockFailures: GuardedRequestFailures = {
  // The guard's own code (`destination_refused`) and message.
  refused: (refusal) => refusal,
  timedOut: (timeoutMs, cause) => new TrellisError('unavailable', 'http_request_failed', `The server did not answer within ${timeoutMs} ms.`, { cause }),
  unreachable: (code, cause) => new TrellisError('unavailable', 'http_request_failed', `The server cannot be reached${code ? ` (${code})` : ''}.`, { cause }),
  tooLarge: (limit) => new TrellisError('unavailable', 'http_response_too_large', `The response is larger than ai.tools.maxResponseBytes (${limit} bytes).`),
};

/**
 * Http block: one HTTP request (`attrs.method`, default POST, to `attrs.url`, with `attrs.headers`
 * and `attrs.body`, all templates) through the server's network guard, with the limits of `http`
 * tool actions. It emits `tool_start` and `tool_result` (`toolCallId` `<blockId>:http`, tool name
 * `http`) like a tool block and sends the call's idempotency key as `Idempotency-Key`: a later
 * attempt of the run answers it from the log. The output is `{ status, body }`; a status outside
 * 2xx fails the block with `http_error`.
 */
export class HttpBlockExecutor implements BlockExecutor<HttpAttrs> {
  readonly kind = 'http' as const;

  constructor(
    private readonly guard: () => NetworkGuard,
    private readonly limits: () => HttpBlockLimits,
  ) {}

  async execute(block: WorkflowBlock<HttpAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const method = block.attrs.method ?? 'POST';
    const url = parseUrl(renderHttpUrl(block.attrs.url, io.ctx));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(block.attrs.headers ?? {})) headers[name.toLowerCase()] = renderTemplate(value, io.ctx).replace(/[\r\n]+/g, ' ');
    let payload: Buffer | undefined;
    if (block.attrs.body !== undefined && method !== 'GET' && method !== 'HEAD') {
      const rendered = renderDeep(block.attrs.body, io.ctx);
      payload = Buffer.from(typeof rendered === 'string' ? rendered : JSON.stringify(rendered ?? null));
      headers['content-type'] ??= typeof rendered === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
    }
    headers['accept'] ??= 'application/json, text/plain;q=0.9, */*;q=0.1';
    headers['user-agent'] ??= 'trellis-workflow/1';
    // The same key on every attempt (a retry of the block, a continuation of the run), as a tool block's.
    const idempotencyKey = blockToolCallKey(io, block.id, 0);
    headers['idempotency-key'] ??= idempotencyKey;
    const toolCallId = `${block.id}:http`;
    await io.toolStart(toolCallId, 'http');
    const recorded = await io.recall(idempotencyKey);
    const result = recorded ? recorded.result : await this.send(block.attrs.responseType ?? 'auto', { method, url, headers, body: payload }, io.signal);
    await io.toolResult(toolCallId, result, idempotencyKey);
    return { output: result ?? null };
  }

  private async send(responseType: NonNullable<HttpAttrs['responseType']>, request: Parameters<typeof sendGuardedRequest>[0], signal: AbortSignal): Promise<HttpBlockResult> {
    const limits = this.limits();
    const response = await sendGuardedRequest(request, { guard: this.guard(), timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxResponseBytes, signal, failures: httpBlockFailures });
    const text = response.body.toString('utf8');
    if (response.status < 200 || response.status >= 300) {
      const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
      throw new TrellisError('unavailable', 'http_error', `The server answered ${response.status}${excerpt ? `: ${excerpt}` : '.'}`, { extra: { status: response.status } });
    }
    if (responseType === 'text') return { status: response.status, body: text };
    if (responseType === 'auto') return { status: response.status, body: parseResponseBody(response.contentType, response.body) };
    try {
      return { status: response.status, body: response.body.length ? (JSON.parse(text) as unknown) : null };
    } catch (error) {
      throw new TrellisError('unavailable', 'http_response_invalid', 'The response is not JSON (responseType: json).', { cause: error });
    }
  }
}

function parseUrl(text: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    /* reported below */
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new TrellisError('bad_request', 'invalid_http_url', `The http block's URL is not an http or https URL once rendered (${JSON.stringify(text.slice(0, 200))}).`);
  }
  return url;
}

export const httpKind = defineBlockKind({
  kind: 'http',
  nodeType: 'httpBlock',
  attrs: HttpAttrs,
  // It calls out of the run: never run twice by a continuation (a recorded answer is recalled).
  replayable: false,
  check: (attrs) => checkHttpAttrs(attrs),
  executor: (services) =>
    new HttpBlockExecutor(
      () => services.get(networkGuardServiceIdentifier),
      () => services.optional(aiConfigServiceIdentifier)?.tools ?? defaultLimits,
    ),
});
