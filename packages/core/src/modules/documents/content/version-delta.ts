import { canonicalJson } from './canonical-json.js';
import type { DocumentContent, RichNode } from './rich-text.js';

/**
 * A version stored as a change of top-level blocks against the version before it: keep the
 * first `head` and the last `tail` blocks of the base, and put `blocks` between them. Its text
 * is canonical JSON: `{"blocks":[...],"head":h,"tail":t}`.
 */
export interface BlockDelta {
  blocks: RichNode[];
  head: number;
  tail: number;
}

/**
 * The delta that turns `before` into `after` (both non-empty top-level block lists), as text.
 * `afterJson[i]` is the canonical JSON of `after[i]`. Blocks are equal when they are the same
 * object (what edit commands leave untouched) or have the same canonical JSON, so command edits
 * cost no serialization of the blocks they keep.
 */
export function blockDelta(before: readonly RichNode[], after: readonly RichNode[], afterJson: readonly string[]): string {
  const beforeJson = new Map<number, string>();
  const same = (i: number, j: number): boolean => {
    if (before[i] === after[j]) return true;
    let text = beforeJson.get(i);
    if (text === undefined) beforeJson.set(i, (text = canonicalJson(before[i])));
    return text === afterJson[j];
  };
  const limit = Math.min(before.length, after.length);
  let head = 0;
  while (head < limit && same(head, head)) head++;
  let tail = 0;
  while (tail < limit - head && same(before.length - 1 - tail, after.length - 1 - tail)) tail++;
  return `{"blocks":[${afterJson.slice(head, after.length - tail).join(',')}],"head":${head},"tail":${tail}}`;
}

/** Applies a delta's text to the content of its base version. */
export function applyBlockDelta(base: DocumentContent, text: string): DocumentContent {
  const delta = JSON.parse(text) as BlockDelta;
  const blocks = base.content ?? [];
  if (!Array.isArray(delta.blocks) || !Number.isInteger(delta.head) || !Number.isInteger(delta.tail) || delta.head < 0 || delta.tail < 0 || delta.head + delta.tail > blocks.length) {
    throw new Error('a version delta does not fit the version it is based on');
  }
  const content = [...blocks.slice(0, delta.head), ...delta.blocks, ...blocks.slice(blocks.length - delta.tail)];
  return content.length ? { type: 'doc', content } : { type: 'doc' };
}
