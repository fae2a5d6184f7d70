import { canonicalJson } from './canonical-json.js';
import { fnv1a32Utf8 } from './fnv1a.js';
import type { DocumentContent, RichNode } from './rich-text.js';

/**
 * A document's content as it is stored and hashed, computed once per write: the canonical JSON
 * text, its FNV-1a hash (the version), its UTF-8 size, and the canonical JSON of each top-level
 * block (what version deltas are made of).
 */
export interface SerializedContent {
  readonly json: string;
  readonly hash: string;
  readonly bytes: number;
  /** Canonical JSON of `content[i]`, for each top-level block. */
  readonly blocks: readonly string[];
}

/**
 * Serializes content once: `json` is exactly `canonicalJson(content)` (a doc node has only `type`
 * and `content`, and `"content"` sorts before `"type"`), built from the blocks' own canonical JSON.
 */
export function serializeContent(content: DocumentContent, known?: ReadonlyMap<RichNode, string>): SerializedContent {
  const record = content as unknown as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined);
  const plain = keys.every((key) => key === 'type' || key === 'content') && record.type === 'doc' && (record.content === undefined || Array.isArray(record.content));
  let json: string;
  let blocks: string[] = [];
  if (!plain) {
    json = canonicalJson(content);
  } else if (content.content === undefined) {
    json = '{"type":"doc"}';
  } else {
    // `known`: canonical JSON of blocks serialized before (kept blocks of a cached document).
    blocks = content.content.map((block) => known?.get(block) ?? (block === undefined || typeof block === 'function' ? 'null' : canonicalJson(block)));
    json = `{"content":[${blocks.join(',')}],"type":"doc"}`;
  }
  const { hash, bytes } = fnv1a32Utf8(json);
  return { json, hash: hash.toString(16).padStart(8, '0'), bytes, blocks };
}
