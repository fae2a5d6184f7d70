/**
 * Canonical JSON: object keys sorted by Unicode code point at every level, no whitespace, and
 * everything else exactly as `JSON.stringify` writes it. Two values that differ only in key order
 * (as PostgreSQL's jsonb returns them) give the same text.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  // One string built by appending (no intermediate arrays): this runs over whole documents.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (i > 0) out += ',';
      out += item === undefined || typeof item === 'function' ? 'null' : canonicalJson(item);
    }
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (!sortedByCodePoint(keys)) keys.sort(compareCodePoints);
  let out = '{';
  let first = true;
  for (const key of keys) {
    const item = record[key];
    if (item === undefined || typeof item === 'function') continue;
    if (!first) out += ',';
    first = false;
    out += JSON.stringify(key) + ':' + canonicalJson(item);
  }
  return out + '}';
}

function sortedByCodePoint(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (compareCodePoints(keys[i - 1]!, keys[i]!) > 0) return false;
  return true;
}

/**
 * Orders strings by code point. UTF-16 code unit order differs only where a surrogate (an astral
 * character) meets a unit in U+E000..U+FFFF; shifting both ranges restores code point order.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return shift(x) - shift(y);
  }
  return a.length - b.length;
}

const shift = (unit: number) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);
