import type { Definition, Nodes, Parent, PhrasingContent, Root, RootContent, TableCell } from 'mdast';
import remarkGfm from 'remark-gfm';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import type { JsonObject, RichMark, RichNode } from './rich-text.js';

/**
 * Plain Markdown (CommonMark with GitHub's tables, strikethrough, task lists and autolinks), as a
 * person or a language model writes it, read into rich-text nodes. markdown-ir hands every stretch
 * of lines outside its `:::type` blocks to this reader. Parsing is remark's (`remark-parse` with
 * `remark-gfm`); only the mapping from its syntax tree (mdast) to our node and mark names is ours.
 *
 * Text keeps markdown-ir's inline extras: `[text]{marks}` spans and `{{json}}` inline nodes are
 * read in plain paragraphs too (`readInline`), so a writer can mix both forms. A run of text that
 * the writer escaped in Markdown terms (a backslash escape or a character reference, so its source
 * differs from its value) is taken literally instead: escaping keeps `\[a]{bold}` as written.
 */
const parser = unified().use(remarkParse).use(remarkGfm).freeze();

type InlineReader = (text: string) => RichNode[];

interface Context {
  source: string;
  definitions: Map<string, Definition>;
  readInline: InlineReader;
}

/** Reads plain Markdown into top-level blocks (without ids: they are given when stored). */
export function fromPlainMarkdown(text: string, readInline: InlineReader): RichNode[] {
  const root = parser.parse(text) as Root;
  const definitions = new Map<string, Definition>();
  collectDefinitions(root, definitions);
  return blocks(root.children, { source: text, definitions, readInline });
}

function collectDefinitions(node: Nodes, out: Map<string, Definition>): void {
  if (node.type === 'definition' && !out.has(node.identifier)) out.set(node.identifier, node);
  if ('children' in node) for (const child of (node as Parent).children) collectDefinitions(child as Nodes, out);
}

function blocks(children: readonly RootContent[], ctx: Context): RichNode[] {
  const out: RichNode[] = [];
  for (const child of children) out.push(...block(child, ctx));
  return out;
}

const withContent = (type: string, content: RichNode[], attrs?: JsonObject): RichNode => {
  const node: RichNode = { type };
  if (attrs && Object.keys(attrs).length) node.attrs = attrs;
  if (content.length) node.content = content;
  return node;
};

function block(node: RootContent, ctx: Context): RichNode[] {
  switch (node.type) {
    case 'paragraph':
      return [withContent('paragraph', inline(node.children, [], ctx))];
    case 'heading':
      return [withContent('heading', inline(node.children, [], ctx), { level: node.depth })];
    case 'thematicBreak':
      return [{ type: 'horizontalRule' }];
    case 'blockquote':
      return [withContent('blockquote', blocks(node.children, ctx))];
    case 'code': {
      const attrs: JsonObject = node.lang ? { language: node.lang } : {};
      return [withContent('codeBlock', node.value ? [{ type: 'text', text: node.value }] : [], attrs)];
    }
    case 'list': {
      const task = node.children.some((item) => typeof item.checked === 'boolean');
      const items = node.children.map((item) =>
        withContent(task ? 'taskItem' : 'listItem', blocks(item.children, ctx), task ? { checked: item.checked === true } : undefined),
      );
      if (task) return [withContent('taskList', items)];
      if (node.ordered) return [withContent('orderedList', items, typeof node.start === 'number' && node.start !== 1 ? { start: node.start } : undefined)];
      return [withContent('bulletList', items)];
    }
    case 'table': {
      const rows = node.children.map((row, r) =>
        withContent(
          'tableRow',
          row.children.map((cell: TableCell) => withContent(r === 0 ? 'tableHeader' : 'tableCell', [withContent('paragraph', inline(cell.children, [], ctx))])),
        ),
      );
      return [withContent('table', rows)];
    }
    case 'html':
      // Raw HTML is kept as the text the writer typed, never interpreted.
      return node.value ? [withContent('paragraph', [{ type: 'text', text: node.value }])] : [];
    case 'footnoteDefinition':
      return [withContent('footnote', blocks(node.children, ctx), { label: node.label ?? node.identifier })];
    case 'definition':
      return []; // used by the references that point at it
    default:
      // Anything else remark may produce (front matter, extensions): its text, as a paragraph.
      return 'value' in node && typeof node.value === 'string' && node.value ? [withContent('paragraph', [{ type: 'text', text: node.value }])] : [];
  }
}

const mark = (type: string, attrs?: JsonObject): RichMark => (attrs ? { type, attrs } : { type });

function withMarks(node: RichNode, marks: readonly RichMark[]): RichNode {
  const all = [...marks, ...(node.marks ?? [])];
  return all.length ? { ...node, marks: all } : node;
}

function linkAttrs(url: string, title: string | null | undefined): JsonObject {
  return title ? { href: url, title } : { href: url };
}

function inline(children: readonly PhrasingContent[], marks: readonly RichMark[], ctx: Context): RichNode[] {
  const out: RichNode[] = [];
  for (const child of children) {
    switch (child.type) {
      case 'text': {
        const start = child.position?.start.offset;
        const end = child.position?.end.offset;
        const verbatim = start !== undefined && end !== undefined && ctx.source.slice(start, end) === child.value;
        const items = verbatim ? ctx.readInline(child.value) : [{ type: 'text', text: child.value }];
        for (const item of items) out.push(item.type === 'text' ? withMarks(item, marks) : item);
        break;
      }
      case 'strong':
        out.push(...inline(child.children, [...marks, mark('bold')], ctx));
        break;
      case 'emphasis':
        out.push(...inline(child.children, [...marks, mark('italic')], ctx));
        break;
      case 'delete':
        out.push(...inline(child.children, [...marks, mark('strike')], ctx));
        break;
      case 'inlineCode':
        out.push({ type: 'text', text: child.value, marks: [...marks, mark('code')] });
        break;
      case 'link':
        out.push(...inline(child.children, [...marks, mark('link', linkAttrs(child.url, child.title))], ctx));
        break;
      case 'linkReference': {
        const target = ctx.definitions.get(child.identifier);
        if (target) out.push(...inline(child.children, [...marks, mark('link', linkAttrs(target.url, target.title))], ctx));
        else out.push({ type: 'text', text: `[${child.label ?? child.identifier}]`, ...(marks.length ? { marks: [...marks] } : {}) });
        break;
      }
      case 'image':
        out.push(image(child.url, child.alt, child.title));
        break;
      case 'imageReference': {
        const target = ctx.definitions.get(child.identifier);
        out.push(target ? image(target.url, child.alt, target.title) : { type: 'text', text: `![${child.alt ?? ''}]`, ...(marks.length ? { marks: [...marks] } : {}) });
        break;
      }
      case 'break':
        out.push({ type: 'hardBreak' });
        break;
      case 'html':
        out.push({ type: 'text', text: child.value, ...(marks.length ? { marks: [...marks] } : {}) });
        break;
      case 'footnoteReference':
        out.push({ type: 'text', text: `[^${child.label ?? child.identifier}]`, ...(marks.length ? { marks: [...marks] } : {}) });
        break;
      default:
        break;
    }
  }
  return out;
}

function image(src: string, alt: string | null | undefined, title: string | null | undefined): RichNode {
  const attrs: JsonObject = { src };
  if (alt) attrs.alt = alt;
  if (title) attrs.title = title;
  return { type: 'image', attrs };
}
