const OFFSET_BASIS = 0x811c9dc5;
const PRIME = 0x01000193;
const encoder = new TextEncoder();

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
  return fnv1a32(encoder.encode(text)).toString(16).padStart(8, '0');
}
