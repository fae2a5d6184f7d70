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
  /**
   * FNV-1a state and UTF-8 bytes of the JSON before block `i` (after the comma that precedes it),
   * for each block: the next serialization goes on from there over the blocks that stay in place.
   */
  readonly states: readonly number[];
  readonly offsets: readonly number[];
}

/** What a serialization of earlier content lets the next one skip (see RecentContent). */
export interface KnownSerialization {
  /** Canonical JSON of blocks serialized before, by block object. */
  readonly blocks: ReadonlyMap<RichNode, string>;
  /** The earlier content's blocks, in order, with the FNV states and byte offsets before each. */
  readonly order: readonly RichNode[];
  readonly states: readonly number[];
  readonly offsets: readonly number[];
}

const PREFIX = '{"content":[';
const SUFFIX = '],"type":"doc"}';
const START = fnv1a32Utf8(PREFIX);

/**
 * Serializes content once: `json` is exactly `canonicalJson(content)` (a doc node has only `type`
 * and `content`, and `"content"` sorts before `"type"`), built from the blocks' own canonical JSON.
 * With `known`, blocks serialized before are not serialized again, and the hash goes on from the
 * state before the first block that is not the same object at the same place as before.
 */
export function serializeContent(content: DocumentContent, known?: KnownSerialization): SerializedContent {
  const record = content as unknown as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined);
  const plain = keys.every((key) => key === 'type' || key === 'content') && record.type === 'doc' && (record.content === undefined || Array.isArray(record.content));
  if (!plain || content.content === undefined) {
    const json = plain ? '{"type":"doc"}' : canonicalJson(content);
    const { hash, bytes } = fnv1a32Utf8(json);
    return { json, hash: hex(hash), bytes, blocks: [], states: [], offsets: [] };
  }
  const list = content.content;
  const blocks = list.map((block) => known?.blocks.get(block) ?? (block === undefined || typeof block === 'function' ? 'null' : canonicalJson(block)));
  const json = `${PREFIX}${blocks.join(',')}${SUFFIX}`;
  const states: number[] = [];
  const offsets: number[] = [];
  // Blocks before `same` are the same objects at the same places as before (the state before a
  // block exists in both only while each has a block there: `same` stops short of either end).
  let same = 0;
  if (known) while (same < list.length - 1 && same < known.order.length - 1 && known.order[same] === list[same]) same++;
  let state = START.hash;
  let bytes = START.bytes;
  for (let i = 0; i < list.length; i++) {
    if (i < same) {
      states.push(known!.states[i]!);
      offsets.push(known!.offsets[i]!);
      continue;
    }
    if (i > 0 && i === same) {
      state = known!.states[i]!;
      bytes = known!.offsets[i]!;
    }
    states.push(state);
    offsets.push(bytes);
    const step = fnv1a32Utf8(i < list.length - 1 ? `${blocks[i]},` : blocks[i]!, state);
    state = step.hash;
    bytes += step.bytes;
  }
  const end = fnv1a32Utf8(SUFFIX, state);
  return { json, hash: hex(end.hash), bytes: bytes + end.bytes, blocks, states, offsets };
}

const hex = (hash: number) => hash.toString(16).padStart(8, '0');
