const OFFSET_BASIS = 0x811c9dc5;
const PRIME = 0x01000193;

/** FNV-1a, 32 bits, over bytes. */
export function fnv1a32(bytes: Uint8Array): number {
  let hash = OFFSET_BASIS;
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, PRIME) >>> 0;
  }
  return hash >>> 0;
}

/** FNV-1a 32 of a string's UTF-8 bytes, as 8 lowercase hexadecimal digits. */
export function fnv1a32Hex(text: string): string {
  return fnv1a32Utf8(text).hash.toString(16).padStart(8, '0');
}

/**
 * FNV-1a 32 of a string's UTF-8 bytes and their count, walking the string itself (no encoded
 * copy of a 1 MB document). Unpaired surrogates count as U+FFFD, as `TextEncoder` writes them.
 */
export function fnv1a32Utf8(text: string, from: number = OFFSET_BASIS): { hash: number; bytes: number } {
  // `from`: the hash of the bytes before `text` (FNV-1a goes on from it).
  let hash = from;
  let bytes = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      hash = Math.imul(hash ^ c, PRIME);
      bytes += 1;
      continue;
    }
    if (c < 0x800) {
      hash = Math.imul(hash ^ (0xc0 | (c >> 6)), PRIME);
      hash = Math.imul(hash ^ (0x80 | (c & 0x3f)), PRIME);
      bytes += 2;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = ((c - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
        hash = Math.imul(hash ^ (0xf0 | (cp >> 18)), PRIME);
        hash = Math.imul(hash ^ (0x80 | ((cp >> 12) & 0x3f)), PRIME);
        hash = Math.imul(hash ^ (0x80 | ((cp >> 6) & 0x3f)), PRIME);
        hash = Math.imul(hash ^ (0x80 | (cp & 0x3f)), PRIME);
        bytes += 4;
        i++;
        continue;
      }
      c = 0xfffd;
    }
    hash = Math.imul(hash ^ (0xe0 | (c >> 12)), PRIME);
    hash = Math.imul(hash ^ (0x80 | ((c >> 6) & 0x3f)), PRIME);
    hash = Math.imul(hash ^ (0x80 | (c & 0x3f)), PRIME);
    bytes += 3;
  }
  return { hash: hash >>> 0, bytes };
}
