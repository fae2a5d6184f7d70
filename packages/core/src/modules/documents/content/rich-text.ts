import { canonicalJson, compareCodePoints } from './canonical-json.js';

/**
 * The rich-text document model: ProseMirror/TipTap JSON. A document is `{ type: 'doc', content }`;
 * every node has a `type` and optionally `attrs`, `content`, `marks`; text nodes have `text` and
 * optionally `marks`. Top-level blocks carry `attrs.id` (unique) and optionally `attrs.name`.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface RichMark {
  type: string;
  attrs?: JsonObject;
}

export interface RichNode {
  type: string;
  attrs?: JsonObject;
  content?: RichNode[];
  marks?: RichMark[];
  text?: string;
}

export interface DocumentContent {
  type: 'doc';
  content?: RichNode[];
}

/** Node and mark type names: letters, digits, `_ . :`, single hyphens between them; at most 64 characters. */
export const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_.:]*(?:-[A-Za-z0-9_.:]+)*$/;
const MAX_TYPE_LENGTH = 64;
const MAX_NODE_DEPTH = 64;
const MAX_VALUE_DEPTH = 32;
const MAX_BLOCK_ID_LENGTH = 128;
/** The Yjs attribute that carries the marks of a non-text node; refused as an attribute name. */
export const NODE_MARKS_ATTRIBUTE = '__marks';

/** A problem found in submitted content, with the JSON path of the offending value. */
export class ContentError extends Error {
  constructor(
    readonly path: string,
    message: string,
    readonly reason = 'invalid_content',
  ) {
    super(path ? `${path}: ${message}` : message);
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/**
 * Validates rich-text JSON and returns it in normal form (a new value; the input is untouched):
 * empty `attrs`, `content` and `marks` are left out, empty text nodes are dropped, adjacent text
 * nodes with the same marks are joined, and marks are sorted (by type, then attributes) without
 * duplicates. Normal form is what ProseMirror itself writes, what the store keeps, and what the
 * content hash is taken over. Strings may not contain U+0000 or unpaired surrogates (PostgreSQL's
 * jsonb refuses them).
 */
export function normalizeDocument(input: unknown): DocumentContent {
  if (!isPlainObject(input)) throw new ContentError('', 'the content must be a JSON object { "type": "doc", "content": [...] }');
  for (const key of Object.keys(input)) {
    if (key !== 'type' && key !== 'content') throw new ContentError(key, 'the doc node takes only "type" and "content"');
  }
  if (input.type !== 'doc') throw new ContentError('type', 'the root node must have type "doc"');
  const doc: DocumentContent = { type: 'doc' };
  if (input.content !== undefined) {
    const content = normalizeNodes(input.content, 'content', 1);
    for (let i = 0; i < content.length; i++) {
      if (content[i]!.type === 'text') throw new ContentError(`content.${i}`, 'top-level blocks cannot be text nodes; wrap text in a paragraph');
    }
    if (content.length) doc.content = content;
  }
  return doc;
}

/** Validates and normalizes an array of nodes (the `content` of some node). */
export function normalizeNodes(input: unknown, path: string, depth = 1): RichNode[] {
  if (!Array.isArray(input)) throw new ContentError(path, 'must be an array of nodes');
  const out: RichNode[] = [];
  input.forEach((item, i) => {
    const node = normalizeNode(item, `${path}.${i}`, depth);
    if (node === null) return;
    const last = out[out.length - 1];
    if (node.type === 'text' && last?.type === 'text' && sameMarks(last.marks, node.marks)) {
      last.text += node.text!;
      return;
    }
    out.push(node);
  });
  return out;
}

/** Validates and normalizes one node; `null` for an empty text node (dropped). */
export function normalizeNode(input: unknown, path: string, depth = 1): RichNode | null {
  if (depth > MAX_NODE_DEPTH) throw new ContentError(path, `nodes may be nested at most ${MAX_NODE_DEPTH} deep`);
  if (!isPlainObject(input)) throw new ContentError(path, 'a node must be a JSON object with a "type"');
  for (const key of Object.keys(input)) {
    if (!['type', 'attrs', 'content', 'marks', 'text'].includes(key)) {
      throw new ContentError(`${path}.${key}`, 'unknown node field (a node has type, attrs, content, marks, text)');
    }
  }
  const type = checkTypeName(input.type, `${path}.type`);
  const node: RichNode = { type };
  if (type === 'text') {
    if (typeof input.text !== 'string') throw new ContentError(`${path}.text`, 'a text node needs a "text" string');
    if (input.attrs !== undefined) throw new ContentError(`${path}.attrs`, 'text nodes have no attrs');
    if (input.content !== undefined) throw new ContentError(`${path}.content`, 'text nodes have no content');
    checkString(input.text, `${path}.text`);
    if (input.text === '') return null;
    node.text = input.text;
  } else {
    if (input.text !== undefined) throw new ContentError(`${path}.text`, 'only nodes of type "text" have text');
    if (input.attrs !== undefined) {
      const attrs = normalizeAttrs(input.attrs, `${path}.attrs`);
      if (NODE_MARKS_ATTRIBUTE in attrs) throw new ContentError(`${path}.attrs.${NODE_MARKS_ATTRIBUTE}`, 'this attribute name is reserved');
      if (Object.keys(attrs).length) node.attrs = attrs;
    }
    if (input.content !== undefined) {
      const content = normalizeNodes(input.content, `${path}.content`, depth + 1);
      if (content.length) node.content = content;
    }
  }
  if (input.marks !== undefined) {
    const marks = normalizeMarks(input.marks, `${path}.marks`);
    if (marks.length) node.marks = marks;
  }
  return node;
}

function normalizeMarks(input: unknown, path: string): RichMark[] {
  if (!Array.isArray(input)) throw new ContentError(path, 'must be an array of marks');
  const marks: RichMark[] = [];
  input.forEach((item, i) => {
    const at = `${path}.${i}`;
    if (!isPlainObject(item)) throw new ContentError(at, 'a mark must be a JSON object with a "type"');
    for (const key of Object.keys(item)) {
      if (key !== 'type' && key !== 'attrs') throw new ContentError(`${at}.${key}`, 'unknown mark field (a mark has type and attrs)');
    }
    const mark: RichMark = { type: checkTypeName(item.type, `${at}.type`) };
    if (item.attrs !== undefined) {
      const attrs = normalizeAttrs(item.attrs, `${at}.attrs`);
      if (Object.keys(attrs).length) mark.attrs = attrs;
    }
    marks.push(mark);
  });
  const keyed = marks.map((mark) => ({ mark, key: canonicalJson(mark.attrs ?? null) }));
  keyed.sort((a, b) => compareCodePoints(a.mark.type, b.mark.type) || compareCodePoints(a.key, b.key));
  return keyed.filter((entry, i) => i === 0 || entry.mark.type !== keyed[i - 1]!.mark.type || entry.key !== keyed[i - 1]!.key).map((entry) => entry.mark);
}

function normalizeAttrs(input: unknown, path: string): JsonObject {
  if (!isPlainObject(input)) throw new ContentError(path, 'attrs must be a JSON object');
  return checkJson(input, path, 0) as JsonObject;
}

/** Copies a JSON value, refusing what JSON cannot carry or PostgreSQL cannot store. */
function checkJson(value: unknown, path: string, depth: number): JsonValue {
  if (depth > MAX_VALUE_DEPTH) throw new ContentError(path, `attribute values may be nested at most ${MAX_VALUE_DEPTH} deep`);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ContentError(path, 'numbers must be finite');
    return value;
  }
  if (typeof value === 'string') {
    checkString(value, path);
    return value;
  }
  if (Array.isArray(value)) return value.map((item, i) => checkJson(item, `${path}.${i}`, depth + 1));
  if (isPlainObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      checkString(key, `${path}.${key}`);
      // Refused as the HTTP edge refuses it (`reserved_key`): assigned to an object, by this copy
      // or by the Yjs decoder of a collaborator's replica, it sets the prototype and the value is lost.
      if (key === '__proto__') throw new ContentError(`${path}.${key}`, 'the key "__proto__" cannot be stored');
      if (item === undefined) continue;
      out[key] = checkJson(item, `${path}.${key}`, depth + 1);
    }
    return out;
  }
  throw new ContentError(path, 'not a JSON value');
}

// U+0000, or a surrogate that is not part of a pair.
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what is refused
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkString(value: string, path: string): void {
  if (UNSTORABLE.test(value)) throw new ContentError(path, 'strings may not contain U+0000 or unpaired surrogates');
}

function checkTypeName(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length > MAX_TYPE_LENGTH || !TYPE_NAME.test(value)) {
    throw new ContentError(path, `a type must be a name of letters, digits, "_", ".", ":" and single "-" (at most ${MAX_TYPE_LENGTH} characters)`);
  }
  return value;
}

export function sameMarks(a: RichMark[] | undefined, b: RichMark[] | undefined): boolean {
  if (!a?.length && !b?.length) return true;
  return canonicalJson(a ?? []) === canonicalJson(b ?? []);
}

/** A node's `attrs.id` when it is a string. */
export const blockId = (node: RichNode): string | undefined => (typeof node.attrs?.id === 'string' ? node.attrs.id : undefined);

/** A node's `attrs.name` when it is a string. */
export const blockName = (node: RichNode): string | null => (typeof node.attrs?.name === 'string' ? node.attrs.name : null);

/**
 * Checks the top-level block identities: every block gets an `attrs.id` (a new one from `newId`
 * when it has none), ids are non-empty strings of at most 128 characters and unique, and
 * `attrs.name`, when present, is a string. Changes `doc` in place and returns it.
 */
export function ensureBlockIds(doc: DocumentContent, newId: () => string): DocumentContent {
  const seen = new Set<string>();
  (doc.content ?? []).forEach((block, i) => {
    const id = block.attrs?.id;
    if (id === undefined || id === null) {
      const { id: _missing, ...rest } = block.attrs ?? {};
      block.attrs = { id: newId(), ...rest };
    } else if (typeof id !== 'string' || id.length === 0 || id.length > MAX_BLOCK_ID_LENGTH) {
      throw new ContentError(`content.${i}.attrs.id`, `a block id must be a non-empty string of at most ${MAX_BLOCK_ID_LENGTH} characters`);
    }
    const name = block.attrs!.name;
    if (name !== undefined && typeof name !== 'string') throw new ContentError(`content.${i}.attrs.name`, 'a block name must be a string');
    const finalId = block.attrs!.id as string;
    if (seen.has(finalId)) throw new ContentError(`content.${i}.attrs.id`, `the block id "${finalId}" is used twice`, 'duplicate_block_id');
    seen.add(finalId);
  });
  return doc;
}

/** Normal form plus block identities: what every stored document satisfies. */
export function prepareDocument(input: unknown, newId: () => string): DocumentContent {
  return ensureBlockIds(normalizeDocument(input), newId);
}

/**
 * `prepareDocument` for the result of edit commands on a stored document: blocks that are the
 * very objects of `previous` (which, as stored content, is in normal form already) are kept as
 * they are; only new or changed blocks are validated and normalized. The result is what
 * `prepareDocument(edited)` gives, without a pass over the whole document.
 */
export function prepareEditedDocument(previous: DocumentContent, edited: DocumentContent, newId: () => string): DocumentContent {
  const kept = new Set<RichNode>(previous.content ?? []);
  const blocks: RichNode[] = [];
  (edited.content ?? []).forEach((block, i) => {
    if (kept.has(block)) {
      blocks.push(block);
      return;
    }
    const node = normalizeNode(block, `content.${i}`, 1);
    if (node === null) return;
    if (node.type === 'text') throw new ContentError(`content.${i}`, 'top-level blocks cannot be text nodes; wrap text in a paragraph');
    blocks.push(node);
  });
  return ensureBlockIds(blocks.length ? { type: 'doc', content: blocks } : { type: 'doc' }, newId);
}

/** An empty document. */
export const emptyDocument = (): DocumentContent => ({ type: 'doc' });
