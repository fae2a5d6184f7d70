import { canonicalJson } from './canonical-json.js';
import { fnv1a32Hex } from './fnv1a.js';

/**
 * The `content_hash` of a document: FNV-1a 32 over the UTF-8 bytes of the content's canonical
 * JSON, as 8 lowercase hexadecimal digits. It is the document's version (`base_version`).
 */
export function contentHash(content: unknown): string {
  return fnv1a32Hex(canonicalJson(content));
}

/** Size of the content as stored and hashed: UTF-8 bytes of its canonical JSON. */
export function contentBytes(content: unknown): number {
  return Buffer.byteLength(canonicalJson(content), 'utf8');
}
