import { normalizeNodes, type DocumentContent, type RichMark, type RichNode } from './rich-text.js';

/**
 * User comments: lines of a block's text that start with `//`. They stay in the document but are
 * kept out of AI prompts (markdown-ir without `keep_comments`, and always for agent tokens).
 *
 * A line is a stretch of inline content (text and inline atoms) ending at a newline inside a
 * text node, at a hard break node, or at the end of the block. It is a comment when its first
 * item is text starting with `//`.
 */
const HARD_BREAKS = new Set(['hardBreak', 'hard_break']);
export const COMMENT_PREFIX = '//';

type Piece = { kind: 'text'; text: string; marks?: RichMark[] } | { kind: 'atom'; node: RichNode };
type Separator = { kind: 'newline'; marks?: RichMark[] } | { kind: 'break'; node: RichNode };

/** Children that are all leaves (text or nodes without content): the inline content of a textblock. */
export function isInlineContent(children: readonly RichNode[]): boolean {
  return children.every((child) => child.type === 'text' || !child.content?.length);
}

/** Whether any block of the document holds a comment line. */
export function hasComments(doc: DocumentContent): boolean {
  let found = false;
  visitContainers(doc.content ?? [], (children) => {
    if (!found) found = splitLines(children).lines.some(isComment);
    return children;
  });
  return found;
}

/** The document without its comment lines (a new value). */
export function stripComments(doc: DocumentContent): DocumentContent {
  const content = visitContainers(structuredClone(doc.content ?? []), (children) => {
    const { lines, separators } = splitLines(children);
    if (!lines.some(isComment)) return children;
    const kept = lines.map((line) => !isComment(line));
    const lastKept = kept.lastIndexOf(true);
    const out: RichNode[] = [];
    lines.forEach((line, i) => {
      if (!kept[i]) return;
      for (const piece of line) out.push(piece.kind === 'text' ? textNode(piece.text, piece.marks) : piece.node);
      if (i < lastKept) {
        const separator = separators[i]!;
        out.push(separator.kind === 'newline' ? textNode('\n', separator.marks) : separator.node);
      }
    });
    return normalizeNodes(out, '');
  });
  return content.length ? { type: 'doc', content } : { type: 'doc' };
}

const textNode = (text: string, marks?: RichMark[]): RichNode => (marks?.length ? { type: 'text', text, marks } : { type: 'text', text });

function isComment(line: Piece[]): boolean {
  const first = line[0];
  return first?.kind === 'text' && first.text.startsWith(COMMENT_PREFIX);
}

/**
 * Applies `edit` to the children of every inline container (a node whose content is inline and
 * has text), innermost first: a node whose block children lose all their content to `edit` is
 * inline afterwards (its text beside them forms lines of its own), and is then edited too.
 */
function visitContainers(nodes: RichNode[], edit: (children: RichNode[]) => RichNode[]): RichNode[] {
  for (const node of nodes) {
    if (!node.content?.length) continue;
    if (!isInlineContent(node.content)) visitContainers(node.content, edit);
    if (isInlineContent(node.content) && node.content.some((child) => child.type === 'text')) {
      const next = edit(node.content);
      if (next.length) node.content = next;
      else delete node.content;
    }
  }
  return nodes;
}

function splitLines(children: readonly RichNode[]): { lines: Piece[][]; separators: Separator[] } {
  const lines: Piece[][] = [[]];
  const separators: Separator[] = [];
  for (const child of children) {
    if (child.type === 'text') {
      const parts = child.text!.split('\n');
      parts.forEach((part, i) => {
        if (i > 0) {
          separators.push({ kind: 'newline', marks: child.marks });
          lines.push([]);
        }
        if (part) lines[lines.length - 1]!.push({ kind: 'text', text: part, marks: child.marks });
      });
    } else if (HARD_BREAKS.has(child.type)) {
      separators.push({ kind: 'break', node: child });
      lines.push([]);
    } else {
      lines[lines.length - 1]!.push({ kind: 'atom', node: child });
    }
  }
  return { lines, separators };
}
