import { triggerErrors } from '../errors.js';
import type { WebhookMapping } from '../entities/webhook-trigger.entity.js';

/** What a mapping reads from an inbound request. */
export interface WebhookRequestParts {
  body: unknown;
  /** The fields of a form body (null when the body is not a form). */
  form: Record<string, string | string[]> | null;
  query: Record<string, string | string[]>;
  headers: Readonly<Record<string, string>>;
}

/** A mapping source: `body`, `body.<path>`, `form.<field>`, `query.<name>` or `header.<name>`. */
export const MAPPING_SOURCE = /^(body(\.[^.\s]+)*|form\.[^.\s]+|query\.[^.\s]+|header\.[a-z0-9!#$%&'*+.^_`|~-]+)$/i;

/**
 * The request body as a value: JSON for `application/json` (and `+json`), the fields of a form for
 * `application/x-www-form-urlencoded` (a repeated field becomes an array), the text otherwise, and
 * null for an empty body. A malformed JSON body answers 400 `webhook_body_unreadable`.
 */
export function parseBody(raw: Uint8Array, contentType: string | undefined): unknown {
  if (raw.byteLength === 0) return null;
  const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (isForm(contentType)) return fieldsOf(new URLSearchParams(text));
  if (type === 'application/json' || type.endsWith('+json') || type === '') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      if (type !== '') throw triggerErrors.unreadableBody('it is not valid JSON');
    }
  }
  return text;
}

/** Whether a content type is a URL-encoded form. */
export const isForm = (contentType: string | undefined) => (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';

/** The fields of a query string or form, a repeated name as an array. */
export function fieldsOf(params: URLSearchParams): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of params) {
    const earlier = fields[name];
    fields[name] = earlier === undefined ? value : Array.isArray(earlier) ? [...earlier, value] : [earlier, value];
  }
  return { ...fields };
}

function walk(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(key)) return undefined;
      current = current[Number(key)];
    } else {
      if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined;
      current = (current as Record<string, unknown>)[key];
    }
  }
  return current;
}

/**
 * The run's inputs from a request. Without a mapping, the body when it is a JSON object or a form
 * (else no inputs). With one, each input takes the value at its source; a source with no value
 * leaves the input out (the deployment's default or required check applies).
 */
export function mapInputs(mapping: WebhookMapping, request: WebhookRequestParts): Record<string, unknown> {
  const entries = Object.entries(mapping);
  if (entries.length === 0) {
    const body = request.body;
    return body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Record<string, unknown>) } : {};
  }
  const inputs: Record<string, unknown> = {};
  for (const [input, source] of entries) {
    const [root, ...path] = source.split('.');
    let value: unknown;
    if (root === 'body') value = walk(request.body, path);
    else if (root === 'form') value = request.form ? request.form[path.join('.')] : undefined;
    else if (root === 'query') value = request.query[path.join('.')];
    else if (root === 'header') value = request.headers[path.join('.').toLowerCase()];
    if (value !== undefined) inputs[input] = value;
  }
  return inputs;
}
