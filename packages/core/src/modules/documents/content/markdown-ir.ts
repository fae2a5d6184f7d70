import { isInlineContent } from './comments.js';
import { fromPlainMarkdown } from './plain-markdown.js';
import { ContentError, TYPE_NAME, type DocumentContent, type JsonObject, type RichMark, type RichNode } from './rich-text.js';

/**
 * markdown-ir: a line-based text form of a rich-text document that people and language models can
 * read and edit, and that converts back to the same JSON. The grammar is in docs/markdown-ir.md.
 *
 *   :::paragraph {"id":"p1","name":"intro"}
 *   Plain text, [bold words]{bold} and [a link]{link={"href":"https://example.com"}}.
 *   // a comment line
 *   :::
 *
 * Every node with content or attributes is a block: an opener line `:::type`, optionally followed
 * by its attrs as a JSON object and its marks as a JSON array, the body, and a closer line `:::`.
 * A body holds either nested blocks or inline text. Inline text is literal except for marked text
 * `[text]{mark mark={json}}`, inline nodes `{{json}}`, and backslash escapes of `\ [ ] { :`.
 */

/** Characters a backslash escapes. */
const ESCAPABLE = new Set(['\\', '[', ']', '{', ':']);
const OPENER = /^:::([^\s{[]+)(.*)$/s;
const CLOSER = /^:::\s*$/;
/** A fence line of plain Markdown code (CommonMark: up to three spaces, then three or more ` or ~). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

// ---------------------------------------------------------------------------------------------
// JSON → markdown-ir

/** Writes a document (in normal form) as markdown-ir. */
export function toMarkdownIr(doc: DocumentContent): string {
  const lines: string[] = [];
  for (const block of doc.content ?? []) {
    if (lines.length) lines.push('');
    writeBlock(block, lines);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

function writeBlock(node: RichNode, out: string[]): void {
  out.push(opener(node));
  if (node.type === 'text') {
    out.push(...escapeInline([{ type: 'text', text: node.text! }]).split('\n'));
  } else if (node.content?.length) {
    if (isInlineContent(node.content)) out.push(...escapeInline(node.content).split('\n'));
    else for (const child of node.content) writeBlock(child, out);
  }
  out.push(':::');
}

function opener(node: RichNode): string {
  let line = `:::${node.type}`;
  if (node.type !== 'text' && node.attrs !== undefined) line += ` ${JSON.stringify(readableAttrs(node.attrs))}`;
  if (node.marks?.length) line += ` ${JSON.stringify(node.marks)}`;
  return line;
}

/** `id` and `name` first, the rest in their own order. */
function readableAttrs(attrs: JsonObject): JsonObject {
  const { id, name, ...rest } = attrs;
  return { ...(id !== undefined ? { id } : {}), ...(name !== undefined ? { name } : {}), ...rest };
}

/** Inline content (text runs and leaf nodes) as escaped inline text; may contain newlines. */
function escapeInline(children: readonly RichNode[]): string {
  let out = '';
  children.forEach((child, i) => {
    const next = children[i + 1];
    if (child.type === 'text') {
      if (child.marks?.length) {
        out += `[${escapeText(child.text!, 'span', out, false)}]{${child.marks.map(writeMark).join(' ')}}`;
      } else {
        out += escapeText(child.text!, 'plain', out, next !== undefined);
      }
    } else {
      out += `{${JSON.stringify(child)}}`;
    }
  });
  return out;
}

function writeMark(mark: RichMark): string {
  return mark.attrs === undefined ? mark.type : `${mark.type}=${JSON.stringify(mark.attrs)}`;
}

/**
 * Escapes literal text. `before` is what was written so far (to know whether a line starts here);
 * `followed` says whether another inline item (which starts with `[` or `{`) comes after it.
 */
function escapeText(text: string, where: 'plain' | 'span', before: string, followed: boolean): string {
  let out = '';
  let lineStart = before.length === 0 || before.endsWith('\n');
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const next = text[i + 1];
    const last = i === text.length - 1;
    if (c === '\\') {
      // A backslash is literal unless an escapable character follows it in the output.
      const escape = next !== undefined ? ESCAPABLE.has(next) : where === 'span' || followed;
      out += escape ? '\\\\' : '\\';
    } else if (c === '[' || (c === ']' && where === 'span')) {
      out += `\\${c}`;
    } else if (c === '{' && where === 'plain' && (next === '{' || (last && followed))) {
      out += '\\{';
    } else if (c === ':' && lineStart && text.startsWith(':::', i)) {
      out += '\\:';
    } else {
      out += c;
    }
    lineStart = c === '\n';
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// markdown-ir → JSON

/** A markdown-ir text that cannot be read, with the 1-based line number. */
export class MarkdownIrError extends ContentError {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}`, message, 'invalid_markdown_ir');
  }
}

/**
 * Reads markdown-ir into document JSON (not yet normalized: pass the result through
 * `normalizeDocument`). Lines outside any block are plain Markdown, a convenience for writers:
 * each stretch of them is read by remark (`fromPlainMarkdown`) into headings, lists, code blocks,
 * tables and so on. A `:::` line inside a fenced code block of such a stretch is code, not a block.
 */
export function fromMarkdownIr(text: string): DocumentContent {
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const content: RichNode[] = [];
  let plain: string[] = [];
  let fence: { char: string; length: number } | null = null;
  const flush = () => {
    if (plain.some((line) => line.trim() !== '')) content.push(...fromPlainMarkdown(plain.join('\n'), readInline));
    plain = [];
    fence = null;
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (fence === null && line.startsWith(':::')) {
      flush();
      const parsed = readBlock(lines, i);
      content.push(parsed.node);
      i = parsed.next;
      continue;
    }
    const marker = FENCE.exec(line);
    // A backtick run followed by more backticks on the line is inline code, not a fence.
    if (marker && !(marker[1]![0] === '`' && marker[2]!.includes('`'))) {
      const run = marker[1]!;
      if (fence === null) fence = { char: run[0]!, length: run.length };
      else if (run[0] === fence.char && run.length >= fence.length && marker[2]!.trim() === '') fence = null;
    }
    plain.push(line);
    i++;
  }
  flush();
  return content.length ? { type: 'doc', content } : { type: 'doc' };
}

function readBlock(lines: readonly string[], start: number): { node: RichNode; next: number } {
  const header = stripCr(lines[start]!);
  if (CLOSER.test(header)) throw new MarkdownIrError(start + 1, 'a closing ":::" without an open block');
  const match = OPENER.exec(header);
  if (!match || !TYPE_NAME.test(match[1]!)) throw new MarkdownIrError(start + 1, 'a block opener is ":::type", then optional attrs {...} and marks [...]');
  const type = match[1]!;
  const { attrs, marks } = readHeaderRest(match[2]!, start + 1, type === 'text');
  const children: RichNode[] = [];
  const body: string[] = [];
  let i = start + 1;
  for (;;) {
    if (i >= lines.length) throw new MarkdownIrError(start + 1, `the block "${type}" opened here is never closed with ":::"`);
    const line = lines[i]!;
    if (CLOSER.test(stripCr(line))) {
      i++;
      break;
    }
    if (line.startsWith(':::')) {
      if (type === 'text') throw new MarkdownIrError(i + 1, 'a :::text block holds text only');
      if (body.some((l) => l.trim() !== '')) throw new MarkdownIrError(i + 1, 'a block holds either nested blocks or text, not both');
      const parsed = readBlock(lines, i);
      children.push(parsed.node);
      i = parsed.next;
      continue;
    }
    if (children.length && line.trim() !== '') throw new MarkdownIrError(i + 1, 'a block holds either nested blocks or text, not both');
    body.push(line);
    i++;
  }
  const node: RichNode = { type };
  if (type === 'text') {
    const inline = readInline(body.join('\n'));
    if (inline.some((item) => item.type !== 'text' || item.marks)) throw new MarkdownIrError(start + 1, 'a :::text block holds plain text; put marks on its opener');
    node.text = inline.map((item) => item.text).join('');
    if (marks) node.marks = marks;
    return { node, next: i };
  }
  if (attrs !== undefined) node.attrs = attrs;
  if (marks) node.marks = marks;
  if (children.length) node.content = children;
  else if (body.length) {
    const inline = readInline(body.join('\n'));
    if (inline.length) node.content = inline;
  }
  return { node, next: i };
}

const stripCr = (line: string) => (line.endsWith('\r') ? line.slice(0, -1) : line);

function readHeaderRest(rest: string, line: number, isText: boolean): { attrs?: JsonObject; marks?: RichMark[] } {
  let i = skipSpaces(rest, 0);
  let attrs: JsonObject | undefined;
  let marks: RichMark[] | undefined;
  if (rest[i] === '{') {
    if (isText) throw new MarkdownIrError(line, 'text has no attrs');
    const end = scanJson(rest, i);
    if (end < 0) throw new MarkdownIrError(line, 'the attrs are not a complete JSON object');
    attrs = parseJson(rest.slice(i, end), line, 'attrs') as JsonObject;
    i = skipSpaces(rest, end);
  }
  if (rest[i] === '[') {
    const end = scanJson(rest, i);
    if (end < 0) throw new MarkdownIrError(line, 'the marks are not a complete JSON array');
    marks = parseJson(rest.slice(i, end), line, 'marks') as RichMark[];
    i = skipSpaces(rest, end);
  }
  if (i < rest.length && rest.slice(i).trim() !== '') throw new MarkdownIrError(line, `unexpected text after the block type: ${rest.slice(i, i + 20)}`);
  return { attrs, marks };
}

function parseJson(text: string, line: number, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new MarkdownIrError(line, `the ${what} are not valid JSON: ${(error as Error).message}`);
  }
}

const skipSpaces = (text: string, from: number) => {
  let i = from;
  while (text[i] === ' ' || text[i] === '\t' || text[i] === '\r') i++;
  return i;
};

/** End (exclusive) of the JSON object or array starting at `start`, or -1 when it is not closed. */
function scanJson(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * Reads inline text into nodes. Readers are forgiving: a `[` that does not start a well-formed
 * `[text]{marks}` and a `{{` that does not start a well-formed inline node are literal.
 */
export function readInline(text: string): RichNode[] {
  const out: RichNode[] = [];
  let plain = '';
  const flush = () => {
    if (plain) out.push({ type: 'text', text: plain });
    plain = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.has(text[i + 1]!)) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '[') {
      const span = readSpan(text, i);
      if (span) {
        flush();
        if (span.node.text) out.push(span.node);
        i = span.next;
        continue;
      }
    }
    if (c === '{' && text[i + 1] === '{') {
      const atom = readAtom(text, i);
      if (atom) {
        flush();
        out.push(atom.node);
        i = atom.next;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}

function readSpan(text: string, start: number): { node: RichNode; next: number } | null {
  let content = '';
  let i = start + 1;
  for (;;) {
    if (i >= text.length) return null;
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.has(text[i + 1]!)) {
      content += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '[') return null;
    if (c === ']') break;
    content += c;
    i++;
  }
  if (text[i + 1] !== '{') return null;
  const marks = readMarkList(text, i + 2);
  if (!marks) return null;
  return { node: { type: 'text', text: content, marks: marks.marks }, next: marks.next };
}

/** `name name={json} ...}` starting after the `{`; returns the marks and the index after `}`. */
function readMarkList(text: string, from: number): { marks: RichMark[]; next: number } | null {
  const marks: RichMark[] = [];
  let i = skipBlanks(text, from);
  while (i < text.length && text[i] !== '}') {
    const nameMatch = /^[A-Za-z_][A-Za-z0-9_.:-]*/.exec(text.slice(i, i + 65));
    if (!nameMatch || !TYPE_NAME.test(nameMatch[0])) return null;
    const mark: RichMark = { type: nameMatch[0] };
    i += nameMatch[0].length;
    if (text[i] === '=') {
      if (text[i + 1] !== '{') return null;
      const end = scanJson(text, i + 1);
      if (end < 0) return null;
      try {
        mark.attrs = JSON.parse(text.slice(i + 1, end)) as JsonObject;
      } catch {
        return null;
      }
      i = end;
    }
    marks.push(mark);
    const after = skipBlanks(text, i);
    if (after === i && text[i] !== '}') return null;
    i = after;
  }
  if (text[i] !== '}' || marks.length === 0) return null;
  return { marks, next: i + 1 };
}

const skipBlanks = (text: string, from: number) => {
  let i = from;
  while (text[i] === ' ') i++;
  return i;
};

function readAtom(text: string, start: number): { node: RichNode; next: number } | null {
  const end = scanJson(text, start + 1);
  if (end < 0 || text[end] !== '}') return null;
  let node: unknown;
  try {
    node = JSON.parse(text.slice(start + 1, end));
  } catch {
    return null;
  }
  if (typeof node !== 'object' || node === null || Array.isArray(node) || typeof (node as RichNode).type !== 'string') return null;
  return { node: node as RichNode, next: end + 1 };
}
