/**
 * JSON Pointer (RFC 6901): a string of zero or more `/`-prefixed reference tokens naming one value
 * inside a JSON document. In a token, `~1` stands for `/` and `~0` for `~` (decoded in that order,
 * so `~01` is `~1`). The URI fragment form (`#/a~1b`, section 6) is percent-decoded first.
 */
export class JsonPointerSyntaxError extends Error {
  override readonly name = 'JsonPointerSyntaxError';
}

/** The reference tokens of a pointer; throws `JsonPointerSyntaxError` when it is malformed. */
export function parsePointer(pointer: string): string[] {
  let text = pointer;
  if (text.startsWith('#')) {
    try {
      text = decodeURIComponent(text.slice(1));
    } catch {
      throw new JsonPointerSyntaxError('The URI fragment is not valid percent-encoding.');
    }
  }
  if (text === '') return [];
  if (!text.startsWith('/')) throw new JsonPointerSyntaxError('A JSON Pointer is empty or starts with "/".');
  return text
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~(?![01])/.test(token)) throw new JsonPointerSyntaxError(`"~" must be followed by 0 or 1 (in "${token}").`);
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

/** Escapes tokens and joins them into a pointer (the inverse of `parsePointer`). */
export function formatPointer(tokens: readonly string[]): string {
  return tokens.map((token) => `/${token.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

const arrayIndex = /^(0|[1-9][0-9]*)$/;

/**
 * Evaluates a pointer against a document. `found` is false when a token names no member or
 * element (including `-`, which names the element after the last one, and leading-zero indexes).
 */
export function resolvePointer(document: unknown, pointer: string): { found: true; value: unknown } | { found: false } {
  let current: unknown = document;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(current)) {
      if (!arrayIndex.test(token)) return { found: false };
      const index = Number(token);
      if (index >= current.length) return { found: false };
      current = current[index];
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.prototype.hasOwnProperty.call(current, token)) return { found: false };
      current = (current as Record<string, unknown>)[token];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: current };
}
