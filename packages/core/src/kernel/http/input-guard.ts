import { TrellisError } from '../errors.js';

/**
 * The checks every untrusted value passes at the edge, before any DTO, handler or database sees
 * it: request bodies (JSON and form), query strings and path parameters. One mechanism for every
 * route, so a class of hostile input is refused once instead of field by field.
 *
 * - Nesting deeper than `maxInputDepth` (arrays and objects): deep values overflow the stack of
 *   recursive code downstream (class-transformer, class-validator).
 * - U+0000 in any string or key: PostgreSQL refuses it in text, SQLite truncates or fails.
 * - Unpaired UTF-16 surrogates: not Unicode text; they cannot be stored or encoded faithfully.
 * - Keys `__proto__` and `constructor`: DTO transformation reads them as the object's prototype
 *   or class, crashing or silently dropping the value.
 */
export const maxInputDepth = 64;

const reservedKeys = new Set(['__proto__', 'constructor']);
// A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const badText = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export type InputPlace = 'body' | 'query' | 'params';

/** Throws a 400 naming the first problem found in `value` (a parsed body, query or params). */
export function guardInput(value: unknown, where: InputPlace): void {
  // Iterative walk: the check itself must not overflow on the input it exists to refuse.
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: '', depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const current = item.value;
    if (typeof current === 'string') {
      checkText(current, item.path, where);
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    if (item.depth >= maxInputDepth) {
      throw refuse('input_too_deep', `The ${where} nests objects and arrays deeper than ${maxInputDepth} levels.`, item.path);
    }
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) stack.push({ value: current[i], path: join(item.path, String(i)), depth: item.depth + 1 });
      continue;
    }
    for (const key of Object.keys(current)) {
      const path = join(item.path, key);
      if (reservedKeys.has(key)) throw refuse('reserved_key', `The ${where} uses the reserved key "${key}".`, path);
      checkText(key, path, where);
      stack.push({ value: (current as Record<string, unknown>)[key], path, depth: item.depth + 1 });
    }
  }
}

function checkText(text: string, path: string, where: InputPlace): void {
  if (!badText.test(text)) return;
  const nul = text.includes('\u0000');
  throw refuse(
    'invalid_characters',
    `The ${where}${path ? ` field ${path}` : ''} contains ${nul ? 'a NUL character (U+0000)' : 'an unpaired UTF-16 surrogate'}, which is not accepted in text.`,
    path,
  );
}

function join(prefix: string, key: string): string {
  return prefix ? `${prefix}.${key}` : key;
}

function refuse(code: string, message: string, field: string): TrellisError {
  return new TrellisError('bad_request', code, message, { status: 400, details: [{ field, constraint: code, message }] });
}
