import fc from 'fast-check';
import type { BlockContent, ListItem, PhrasingContent, Root, RootContent } from 'mdast';
import remarkGfm from 'remark-gfm';
import remarkStringify from 'remark-stringify';
import { unified } from 'unified';
import { describe, expect, it } from 'vitest';
import { hasComments, stripComments } from './comments.js';
import { fromMarkdownIr, toMarkdownIr } from './markdown-ir.js';
import { normalizeDocument, type DocumentContent, type RichMark, type RichNode } from './rich-text.js';

/** Reads markdown-ir (here: plain Markdown) and returns the top-level blocks in normal form. */
const read = (text: string): RichNode[] => normalizeDocument(fromMarkdownIr(text)).content ?? [];
const t = (text: string, ...marks: RichMark[]): RichNode => (marks.length ? { type: 'text', text, marks } : { type: 'text', text });
const p = (...content: RichNode[]): RichNode => ({ type: 'paragraph', content });
const item = (...content: RichNode[]): RichNode => ({ type: 'listItem', content });

describe('plain Markdown in markdown-ir', () => {
  it('reads ATX and setext headings with their level', () => {
    expect(read('# One\n\n### Three *em*\n\nTwo\n---\n')).toEqual([
      { type: 'heading', attrs: { level: 1 }, content: [t('One')] },
      { type: 'heading', attrs: { level: 3 }, content: [t('Three '), t('em', { type: 'italic' })] },
      { type: 'heading', attrs: { level: 2 }, content: [t('Two')] },
    ]);
  });

  it('reads emphasis, strong, strikethrough, inline code and links as marks', () => {
    expect(read('A *b* _c_ **d** __e__ ***f*** ~~g~~ `h` [i](https://x.example/i "T") <https://auto.example>.\n')).toEqual([
      p(
        t('A '),
        t('b', { type: 'italic' }),
        t(' '),
        t('c', { type: 'italic' }),
        t(' '),
        t('d', { type: 'bold' }),
        t(' '),
        t('e', { type: 'bold' }),
        t(' '),
        t('f', { type: 'bold' }, { type: 'italic' }),
        t(' '),
        t('g', { type: 'strike' }),
        t(' '),
        t('h', { type: 'code' }),
        t(' '),
        t('i', { type: 'link', attrs: { href: 'https://x.example/i', title: 'T' } }),
        t(' '),
        t('https://auto.example', { type: 'link', attrs: { href: 'https://auto.example' } }),
        t('.'),
      ),
    ]);
  });

  it('resolves reference links and reads images and hard breaks as inline nodes', () => {
    expect(read('See [the docs][d] and ![a cat](/cat.png "Cat").\nline one  \nline two\n\n[d]: https://docs.example\n')).toEqual([
      p(
        t('See '),
        t('the docs', { type: 'link', attrs: { href: 'https://docs.example' } }),
        t(' and '),
        { type: 'image', attrs: { src: '/cat.png', alt: 'a cat', title: 'Cat' } },
        t('.\nline one'),
        { type: 'hardBreak' },
        t('line two'),
      ),
    ]);
  });

  it('reads bullet lists, ordered lists (with their start) and nesting', () => {
    expect(read('- one\n- two\n  1. deep\n  2. deeper\n     * deepest\n\n3. three\n4. four\n')).toEqual([
      {
        type: 'bulletList',
        content: [
          item(p(t('one'))),
          item(p(t('two')), { type: 'orderedList', content: [item(p(t('deep'))), item(p(t('deeper')), { type: 'bulletList', content: [item(p(t('deepest')))] })] }),
        ],
      },
      { type: 'orderedList', attrs: { start: 3 }, content: [item(p(t('three'))), item(p(t('four')))] },
    ]);
  });

  it('reads task lists with their checked state', () => {
    expect(read('- [x] done\n- [ ] todo\n')).toEqual([
      {
        type: 'taskList',
        content: [
          { type: 'taskItem', attrs: { checked: true }, content: [p(t('done'))] },
          { type: 'taskItem', attrs: { checked: false }, content: [p(t('todo'))] },
        ],
      },
    ]);
  });

  it('reads fenced code with its language, verbatim, including lines that look like blocks or comments', () => {
    expect(read('```ts\nconst a = *b*;\n:::paragraph\n// kept\n```\n\n~~~\nplain\n~~~\n\n    indented code\n')).toEqual([
      { type: 'codeBlock', attrs: { language: 'ts' }, content: [t('const a = *b*;\n:::paragraph\n// kept')] },
      { type: 'codeBlock', content: [t('plain')] },
      { type: 'codeBlock', content: [t('indented code')] },
    ]);
  });

  it('reads blockquotes with nested blocks, and thematic breaks', () => {
    expect(read('> quoted **text**\n>\n> - a point\n\n***\n')).toEqual([
      { type: 'blockquote', content: [p(t('quoted '), t('text', { type: 'bold' })), { type: 'bulletList', content: [item(p(t('a point')))] }] },
      { type: 'horizontalRule' },
    ]);
  });

  it('reads GitHub tables: a header row, then body rows, each cell a paragraph', () => {
    const cell = (type: string, ...content: RichNode[]): RichNode => ({ type, content: [p(...content)] });
    expect(read('| Name | Score |\n|:-----|------:|\n| Ada | **9** |\n| `Bob` | 7 |\n')).toEqual([
      {
        type: 'table',
        content: [
          { type: 'tableRow', content: [cell('tableHeader', t('Name')), cell('tableHeader', t('Score'))] },
          { type: 'tableRow', content: [cell('tableCell', t('Ada')), cell('tableCell', t('9', { type: 'bold' }))] },
          { type: 'tableRow', content: [cell('tableCell', t('Bob', { type: 'code' })), cell('tableCell', t('7'))] },
        ],
      },
    ]);
  });

  it('joins consecutive lines into one paragraph, so // lines stay comment lines of it', () => {
    const blocks = read('Intro line\n// a note for people\nmore text\n');
    expect(blocks).toEqual([p(t('Intro line\n// a note for people\nmore text'))]);
    const doc: DocumentContent = { type: 'doc', content: blocks };
    expect(hasComments(doc)).toBe(true);
    expect(stripComments(doc).content).toEqual([p(t('Intro line\nmore text'))]);
  });

  it('reads a backslash line end as a hard break, and footnotes as a literal reference and a footnote node', () => {
    expect(read('one\\\ntwo[^n]\n\n[^n]: the *note*\n')).toEqual([
      p(t('one'), { type: 'hardBreak' }, t('two[^n]')),
      { type: 'footnote', attrs: { label: 'n' }, content: [p(t('the '), t('note', { type: 'italic' }))] },
    ]);
  });

  it('keeps raw HTML as literal text, never interpreted', () => {
    expect(read('<div onclick="x()">hi</div>\n\nan <b>inline</b> tag\n')).toEqual([p(t('<div onclick="x()">hi</div>')), p(t('an <b>inline</b> tag'))]);
  });

  it('mixes with markdown-ir blocks, which keep their literal bodies and ids', () => {
    const text = '# Plan\n:::paragraph {"id":"p1"}\n*not emphasis* [kept]{bold}\n:::\n- after\n';
    expect(read(text)).toEqual([
      { type: 'heading', attrs: { level: 1 }, content: [t('Plan')] },
      { type: 'paragraph', attrs: { id: 'p1' }, content: [t('*not emphasis* '), t('kept', { type: 'bold' })] },
      { type: 'bulletList', content: [item(p(t('after')))] },
    ]);
  });

  it('still reads markdown-ir spans and inline nodes in plain text, unless they are escaped in Markdown', () => {
    expect(read('Ship [beta]{bold} to {{"type":"mention","attrs":{"id":"u1"}}}\n\nnot \\[beta]{bold}\n')).toEqual([
      p(t('Ship '), t('beta', { type: 'bold' }), t(' to '), { type: 'mention', attrs: { id: 'u1' } }),
      p(t('not [beta]{bold}')),
    ]);
  });

  it('treats a ::: line inside a fenced code block as code, and one after it as a block', () => {
    expect(read('````md\n:::note\nbody\n:::\n````\n:::note {"id":"n"}\nreal\n:::\n')).toEqual([
      { type: 'codeBlock', attrs: { language: 'md' }, content: [t(':::note\nbody\n:::')] },
      { type: 'note', attrs: { id: 'n' }, content: [t('real')] },
    ]);
    // Three backticks with another backtick later on the line do not open a fence (CommonMark).
    expect(read('```a` b\n:::note {"id":"n"}\nreal\n:::\n')).toEqual([p(t('```a` b')), { type: 'note', attrs: { id: 'n' }, content: [t('real')] }]);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: documents made of the constructs above, written as Markdown by remark-stringify (not
// by us), read back into the same nodes.

const word = fc.stringMatching(/^[A-Za-z0-9*_#<>!|~`\\()&;.-]{1,6}$/);
const words = fc.array(word, { minLength: 1, maxLength: 4 }).map((ws) => ws.join(' '));
const markSet = fc.subarray(['bold', 'italic', 'strike'] as const);
const span = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('text' as const), text: words, marks: markSet }) },
  fc.record({ kind: fc.constant('code' as const), text: fc.stringMatching(/^[A-Za-z0-9*_ <>.-]{0,5}[A-Za-z0-9]$/).map((s) => s.replace(/^ +/, '')).filter((s) => s.length > 0) }),
  fc.record({ kind: fc.constant('link' as const), text: words, href: fc.constantFrom('https://a.example/x', '/rel/path', 'mailto:a@b.example') }),
);
/**
 * Spans are written apart by a space: Markdown has no way to write two adjacent runs that share
 * a mark as two runs, and the generator below wraps each run on its own.
 */
type Span = typeof span extends fc.Arbitrary<infer S> ? S : never;
const spans = fc.array(span, { minLength: 1, maxLength: 4 }).map((list) => list.flatMap((s, i): Span[] => (i === 0 ? [s] : [{ kind: 'text', text: ' ', marks: [] }, s])));
type Block =
  | { kind: 'paragraph'; spans: Span[] }
  | { kind: 'heading'; level: 1 | 2 | 3 | 4 | 5 | 6; spans: Span[] }
  | { kind: 'code'; lang: string | null; text: string }
  | { kind: 'quote'; blocks: Block[] }
  | { kind: 'list'; ordered: boolean; items: Block[][] };
const blockArb: fc.Memo<Block> = fc.memo((depth) => {
  const leaves = [
    fc.record({ kind: fc.constant('paragraph' as const), spans }),
    fc.record({ kind: fc.constant('heading' as const), level: fc.constantFrom(1, 2, 3, 4, 5, 6) as fc.Arbitrary<1 | 2 | 3 | 4 | 5 | 6>, spans }),
    fc.record({ kind: fc.constant('code' as const), lang: fc.option(fc.constantFrom('ts', 'sh', 'json'), { nil: null }), text: fc.stringMatching(/^[ -~]{1,12}(\n[ -~]{0,12}){0,2}$/).filter((s) => s.trim().length > 0 && !/^\s/.test(s) && !/\s$/.test(s)) }),
  ];
  if (depth <= 0) return fc.oneof(...leaves);
  const paragraphFirst = fc.tuple(fc.record({ kind: fc.constant('paragraph' as const), spans }), fc.array(blockArb(depth - 1), { maxLength: 1 })).map(([first, rest]) => [first, ...rest] as Block[]);
  return fc.oneof(
    ...leaves,
    fc.record({ kind: fc.constant('quote' as const), blocks: fc.array(blockArb(depth - 1), { minLength: 1, maxLength: 2 }) }),
    fc.record({ kind: fc.constant('list' as const), ordered: fc.boolean(), items: fc.array(paragraphFirst, { minLength: 1, maxLength: 3 }) }),
  );
});

const MDAST_MARK = { bold: 'strong', italic: 'emphasis', strike: 'delete' } as const;
function toPhrasing(s: Span): PhrasingContent {
  if (s.kind === 'code') return { type: 'inlineCode', value: s.text };
  if (s.kind === 'link') return { type: 'link', url: s.href, children: [{ type: 'text', value: s.text }] };
  let node: PhrasingContent = { type: 'text', value: s.text };
  for (const m of s.marks) node = { type: MDAST_MARK[m], children: [node] } as PhrasingContent;
  return node;
}
function toMdast(b: Block): BlockContent {
  switch (b.kind) {
    case 'paragraph':
      return { type: 'paragraph', children: b.spans.map(toPhrasing) };
    case 'heading':
      return { type: 'heading', depth: b.level, children: b.spans.map(toPhrasing) };
    case 'code':
      return { type: 'code', lang: b.lang, value: b.text };
    case 'quote':
      return { type: 'blockquote', children: b.blocks.map(toMdast) };
    case 'list':
      return { type: 'list', ordered: b.ordered, spread: false, children: b.items.map((blocks): ListItem => ({ type: 'listItem', spread: false, children: blocks.map(toMdast) })) };
  }
}
function toRichInline(s: Span): RichNode {
  if (s.kind === 'code') return t(s.text, { type: 'code' });
  if (s.kind === 'link') return t(s.text, { type: 'link', attrs: { href: s.href } });
  return t(s.text, ...s.marks.map((type) => ({ type })));
}
function toRich(b: Block): RichNode {
  switch (b.kind) {
    case 'paragraph':
      return p(...b.spans.map(toRichInline));
    case 'heading':
      return { type: 'heading', attrs: { level: b.level }, content: b.spans.map(toRichInline) };
    case 'code':
      return { type: 'codeBlock', ...(b.lang ? { attrs: { language: b.lang } } : {}), content: [t(b.text)] };
    case 'quote':
      return { type: 'blockquote', content: b.blocks.map(toRich) };
    case 'list':
      return { type: b.ordered ? 'orderedList' : 'bulletList', content: b.items.map((blocks) => item(...blocks.map(toRich))) };
  }
}

const writer = unified().use(remarkGfm).use(remarkStringify, { fences: true }).freeze();

describe('plain Markdown, property', () => {
  it('reads back what remark-stringify writes for generated documents: same nodes, marks and text', () => {
    fc.assert(
      fc.property(fc.array(blockArb(2), { minLength: 1, maxLength: 4 }), (blocks) => {
        // Adjacent lists of the same kind would merge in Markdown; a paragraph between them is how a writer separates them.
        const separated: Block[] = [];
        for (const b of blocks) {
          if (b.kind === 'list' && separated.at(-1)?.kind === 'list') separated.push({ kind: 'paragraph', spans: [{ kind: 'text', text: 'sep', marks: [] }] });
          separated.push(b);
        }
        const root: Root = { type: 'root', children: separated.map(toMdast) as RootContent[] };
        const markdown = writer.stringify(root);
        const expected = normalizeDocument({ type: 'doc', content: separated.map(toRich) });
        expect(normalizeDocument(fromMarkdownIr(markdown)), markdown).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('what it reads from plain Markdown then round-trips through the lossless form', () => {
    const doc = normalizeDocument(fromMarkdownIr('# T\n\n- a *b*\n  1. c\n\n| x |\n|---|\n| `y` |\n\n```sh\nrun\n```\n'));
    expect(normalizeDocument(fromMarkdownIr(toMarkdownIr(doc)))).toEqual(doc);
  });
});
