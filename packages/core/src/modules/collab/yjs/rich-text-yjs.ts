import * as Y from 'yjs';
import { canonicalJson, fnv1a32Hex, normalizeDocument, NODE_MARKS_ATTRIBUTE, TYPE_NAME, type DocumentContent, type JsonObject, type RichMark, type RichNode } from '../../documents/index.js';

/**
 * The mapping between the rich-text JSON and a Yjs document, the one y-prosemirror (TipTap's
 * Collaboration extension) uses, so editors bind to it directly:
 *
 * - the document's top-level blocks are the children of the `Y.XmlFragment` named `default`;
 * - a node is a `Y.XmlElement` whose nodeName is the node type and whose attributes are the node's
 *   attrs (any JSON value); marks of a non-text node are kept in the attribute `__marks`;
 * - consecutive text nodes are one `Y.XmlText`; each run's marks are formatting attributes named
 *   after the mark type with the mark's attrs (`{}` when it has none) as value. When a run has two
 *   marks of the same type, each is named `type--<8 hex digits>` (a hash of the mark), which
 *   y-prosemirror reads back as `type`.
 */
export const FRAGMENT_NAME = 'default';

const HASHED_MARK = /--[a-zA-Z0-9+/=]{8}$/;

/**
 * An attribute value as Yjs stores it: Yjs picks the content type by the value's constructor, so
 * an object without a prototype (`Object.create(null)`, what safe parsers and some JSON libraries
 * make) is copied into a plain object, at any depth; everything else is passed as it is.
 */
function yjsValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.some((item) => typeof item === 'object' && item !== null) ? value.map(yjsValue) : value;
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return value;
  const plain: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) Object.defineProperty(plain, key, { value: yjsValue(item), enumerable: true, writable: true, configurable: true });
  return plain;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);

/** Inserts nodes into an integrated parent at `index` (call inside a transaction). */
export function writeNodes(parent: Y.XmlFragment | Y.XmlElement, index: number, nodes: readonly RichNode[]): number {
  let at = index;
  let i = 0;
  while (i < nodes.length) {
    const node = nodes[i]!;
    if (node.type === 'text') {
      const runs: RichNode[] = [];
      while (i < nodes.length && nodes[i]!.type === 'text') runs.push(nodes[i++]!);
      const text = new Y.XmlText();
      parent.insert(at++, [text]);
      text.applyDelta(runs.map((run) => ({ insert: run.text!, attributes: marksToAttributes(run.marks) })));
      continue;
    }
    const element = new Y.XmlElement(node.type);
    parent.insert(at++, [element]);
    for (const [key, value] of Object.entries(node.attrs ?? {})) element.setAttribute(key, yjsValue(value) as never);
    if (node.marks?.length) element.setAttribute(NODE_MARKS_ATTRIBUTE, node.marks as never);
    if (node.content?.length) writeNodes(element, 0, node.content);
    i++;
  }
  return at - index;
}

/** Fills an empty fragment with a document's blocks. */
export function writeDocument(fragment: Y.XmlFragment, doc: DocumentContent): void {
  writeNodes(fragment, 0, doc.content ?? []);
}

function marksToAttributes(marks: readonly RichMark[] | undefined): Record<string, unknown> | undefined {
  if (!marks?.length) return undefined;
  const counts = new Map<string, number>();
  for (const mark of marks) counts.set(mark.type, (counts.get(mark.type) ?? 0) + 1);
  const attributes: Record<string, unknown> = {};
  for (const mark of marks) {
    const key = counts.get(mark.type)! > 1 ? `${mark.type}--${fnv1a32Hex(canonicalJson(mark))}` : mark.type;
    attributes[key] = mark.attrs ?? {};
  }
  return attributes;
}

function attributesToMarks(attributes: Record<string, unknown> | undefined): RichMark[] | undefined {
  if (!attributes) return undefined;
  const marks: RichMark[] = [];
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    const type = key.replace(HASHED_MARK, '');
    if (!TYPE_NAME.test(type)) continue;
    marks.push(isPlainObject(value) && Object.keys(value).length ? { type, attrs: value as JsonObject } : { type });
  }
  return marks.length ? marks : undefined;
}

/** Reads the children of a Yjs element or fragment as rich-text nodes (not yet normalized). */
export function readNodes(parent: Y.XmlFragment | Y.XmlElement): RichNode[] {
  const out: RichNode[] = [];
  for (const child of parent.toArray()) {
    if (child instanceof Y.XmlText) {
      for (const op of child.toDelta() as Array<{ insert: unknown; attributes?: Record<string, unknown> }>) {
        if (typeof op.insert !== 'string' || op.insert === '') continue;
        const marks = attributesToMarks(op.attributes);
        out.push(marks ? { type: 'text', text: op.insert, marks } : { type: 'text', text: op.insert });
      }
    } else if (child instanceof Y.XmlElement) {
      const node = readElement(child);
      if (node) out.push(node);
    }
  }
  return out;
}

function readElement(element: Y.XmlElement): RichNode | null {
  if (!TYPE_NAME.test(element.nodeName) || element.nodeName === 'text') return null;
  const node: RichNode = { type: element.nodeName };
  const attributes = element.getAttributes() as Record<string, unknown>;
  const attrs: JsonObject = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (key === NODE_MARKS_ATTRIBUTE || value === undefined || value instanceof Uint8Array || value instanceof Y.AbstractType) continue;
    attrs[key] = value as JsonObject[string];
  }
  if (Object.keys(attrs).length) node.attrs = attrs;
  const marks = attributes[NODE_MARKS_ATTRIBUTE];
  if (Array.isArray(marks) && marks.length) node.marks = marks as RichMark[];
  const content = readNodes(element);
  if (content.length) node.content = content;
  return node;
}

/**
 * The fragment as a document in normal form. Parts that cannot be represented (text directly in
 * the fragment, unnamed nodes, values JSON cannot carry) are left out; `null` when the rest still
 * fails validation.
 */
export function readDocument(fragment: Y.XmlFragment): DocumentContent | null {
  const blocks = readNodes(fragment).filter((node) => node.type !== 'text');
  try {
    return normalizeDocument(blocks.length ? { type: 'doc', content: blocks } : { type: 'doc' });
  } catch {
    return null;
  }
}

/**
 * Gives every top-level element an `id` attribute, unique in the fragment (call inside a
 * transaction). Answers whether anything changed.
 */
export function ensureElementIds(fragment: Y.XmlFragment, newId: () => string): boolean {
  const seen = new Set<string>();
  let changed = false;
  for (const child of fragment.toArray()) {
    if (!(child instanceof Y.XmlElement)) continue;
    const id = child.getAttribute('id') as unknown;
    if (typeof id !== 'string' || id === '' || id.length > 128 || seen.has(id)) {
      const fresh = newId();
      child.setAttribute('id', fresh as never);
      seen.add(fresh);
      changed = true;
    } else {
      seen.add(id);
    }
  }
  return changed;
}

/**
 * Turns the fragment's content into `target` with the fewest block changes: top-level blocks equal
 * in both stay untouched (so editors keep their cursors there), others are removed or inserted.
 * Call inside a transaction.
 */
export function replaceContent(fragment: Y.XmlFragment, target: DocumentContent): void {
  const children = fragment.toArray();
  const current = children.map((child) => {
    if (!(child instanceof Y.XmlElement)) return null;
    const node = readElement(child);
    return node ? canonicalJson(normalizeDocument({ type: 'doc', content: [node] }).content?.[0] ?? null) : null;
  });
  const wantedBlocks = target.content ?? [];
  const wanted = wantedBlocks.map((block) => canonicalJson(block));
  const pairs = commonSubsequence(current, wanted);
  const keptCurrent = new Set(pairs.map(([i]) => i));
  const keptWanted = new Set(pairs.map(([, j]) => j));
  for (let i = children.length - 1; i >= 0; i--) if (!keptCurrent.has(i)) fragment.delete(i, 1);
  let at = 0;
  wantedBlocks.forEach((block, j) => {
    if (!keptWanted.has(j)) writeNodes(fragment, at, [block]);
    at++;
  });
}

/** Index pairs of a longest common subsequence (`null` entries never match). */
function commonSubsequence(a: ReadonlyArray<string | null>, b: readonly string[]): Array<[number, number]> {
  let start = 0;
  while (start < a.length && start < b.length && a[start] !== null && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] !== null && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < start; i++) pairs.push([i, i]);
  const n = endA - start;
  const m = endB - start;
  if (n > 0 && m > 0 && n * m <= 4_000_000) {
    const table: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        table[i]![j] = a[start + i] !== null && a[start + i] === b[start + j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (a[start + i] !== null && a[start + i] === b[start + j]) {
        pairs.push([start + i, start + j]);
        i++;
        j++;
      } else if (table[i + 1]![j]! >= table[i]![j + 1]!) i++;
      else j++;
    }
  }
  for (let k = 0; k < a.length - endA; k++) pairs.push([endA + k, endB + k]);
  return pairs;
}
