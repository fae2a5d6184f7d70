import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { controlFlowDocument, richDocument } from './arbitraries.js';
import { hasComments, stripComments } from './comments.js';
import { fromMarkdownIr, MarkdownIrError, toMarkdownIr } from './markdown-ir.js';
import { normalizeDocument, type DocumentContent } from './rich-text.js';

const roundTrip = (doc: DocumentContent) => normalizeDocument(fromMarkdownIr(toMarkdownIr(doc)));

describe('markdown-ir', () => {
  it('round-trips generated documents without loss (JSON → markdown-ir → JSON is the identity)', () => {
    fc.assert(
      fc.property(richDocument, (doc) => {
        expect(roundTrip(doc)).toEqual(doc);
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips control-flow workflows (loop, repeat, branch and parallel containers, nested, with expressions)', () => {
    fc.assert(
      fc.property(controlFlowDocument, (doc) => {
        const text = toMarkdownIr(doc);
        expect(normalizeDocument(fromMarkdownIr(text))).toEqual(doc);
        expect(toMarkdownIr(roundTrip(doc))).toBe(text);
      }),
      { numRuns: 300 },
    );
    // Nested containers make large documents: 5 s when quiet, over 30 s at load 25.
  }, 120_000);

  it('generates control-flow workflows that are JSON documents (an http body of -0 made CI fail with seed 1822572727)', () => {
    fc.assert(
      fc.property(controlFlowDocument, (doc) => {
        expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
      }),
      { numRuns: 300, seed: 1822572727 },
    );
  }, 120_000);

  it('is stable: writing the read-back document gives the same text', () => {
    fc.assert(
      fc.property(richDocument, (doc) => {
        const text = toMarkdownIr(doc);
        expect(toMarkdownIr(roundTrip(doc))).toBe(text);
      }),
      { numRuns: 200 },
    );
  });

  it('writes a readable form: one block per opener, attrs as JSON, marks as spans', () => {
    const doc = normalizeDocument({
      type: 'doc',
      content: [
        { type: 'heading', attrs: { level: 1, id: 'h1' }, content: [{ type: 'text', text: 'Plan' }] },
        {
          type: 'paragraph',
          attrs: { id: 'p1', name: 'intro' },
          content: [
            { type: 'text', text: 'See ' },
            { type: 'text', text: 'the docs', marks: [{ type: 'link', attrs: { href: 'https://example.com' } }, { type: 'bold' }] },
            { type: 'text', text: ' and a[0].' },
          ],
        },
        { type: 'codeBlock', attrs: { id: 'c1', language: 'js' }, content: [{ type: 'text', text: '// set up\nconst x = 1;' }] },
        { type: 'bulletList', attrs: { id: 'l1' }, content: [{ type: 'listItem', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'one' }] }] }] },
      ],
    });
    expect(toMarkdownIr(doc)).toBe(
      [
        ':::heading {"id":"h1","level":1}',
        'Plan',
        ':::',
        '',
        ':::paragraph {"id":"p1","name":"intro"}',
        'See [the docs]{bold link={"href":"https://example.com"}} and a\\[0].',
        ':::',
        '',
        ':::codeBlock {"id":"c1","language":"js"}',
        '// set up',
        'const x = 1;',
        ':::',
        '',
        ':::bulletList {"id":"l1"}',
        ':::listItem',
        ':::paragraph',
        'one',
        ':::',
        ':::',
        ':::',
        '',
      ].join('\n'),
    );
  });

  it('escapes body lines that would read as block lines', () => {
    const doc = normalizeDocument({ type: 'doc', content: [{ type: 'paragraph', attrs: { id: 'p' }, content: [{ type: 'text', text: ':::\n:::x {}' }] }] });
    const text = toMarkdownIr(doc);
    expect(text).toContain('\n\\:::\n\\:::x {}\n');
    expect(roundTrip(doc)).toEqual(doc);
  });

  it('reads forgivingly what a person or model writes', () => {
    const doc = normalizeDocument(fromMarkdownIr(':::paragraph {"id":"a"}\narr[0] and {x} and [not a span]\n:::\nloose line\n\n// a comment line\n'));
    expect(doc.content).toEqual([
      { type: 'paragraph', attrs: { id: 'a' }, content: [{ type: 'text', text: 'arr[0] and {x} and [not a span]' }] },
      { type: 'paragraph', content: [{ type: 'text', text: 'loose line' }] },
      { type: 'paragraph', content: [{ type: 'text', text: '// a comment line' }] },
    ]);
  });

  it('reports malformed input with its line number', () => {
    expect(() => fromMarkdownIr(':::paragraph {"id":\nx\n:::')).toThrow(MarkdownIrError);
    expect(() => fromMarkdownIr(':::paragraph\ntext')).toThrow(/line 1/);
    expect(() => fromMarkdownIr('ok\n:::\n')).toThrow(/line 2/);
    expect(() => fromMarkdownIr(':::bulletList\ntext\n:::listItem\n:::\n:::')).toThrow(/not both/);
  });
});

describe('comments', () => {
  const doc = normalizeDocument({
    type: 'doc',
    content: [
      { type: 'paragraph', attrs: { id: 'p1' }, content: [{ type: 'text', text: '// note to self' }] },
      { type: 'paragraph', attrs: { id: 'p2' }, content: [{ type: 'text', text: 'keep // this is not a comment' }] },
      { type: 'codeBlock', attrs: { id: 'c1' }, content: [{ type: 'text', text: 'a = 1\n// explain\nb = 2\n// tail' }] },
      { type: 'paragraph', attrs: { id: 'p3' }, content: [{ type: 'text', text: 'line' }, { type: 'hardBreak' }, { type: 'text', text: '//', marks: [{ type: 'bold' }] }, { type: 'text', text: ' bold comment' }] },
    ],
  });

  it('finds comment lines', () => {
    expect(hasComments(doc)).toBe(true);
    expect(hasComments(normalizeDocument({ type: 'doc', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'a // b' }] }] }))).toBe(false);
  });

  it('strips comment lines and keeps the rest, with their separators', () => {
    const stripped = stripComments(doc);
    expect(hasComments(stripped)).toBe(false);
    expect(stripped.content).toEqual([
      { type: 'paragraph', attrs: { id: 'p1' } },
      { type: 'paragraph', attrs: { id: 'p2' }, content: [{ type: 'text', text: 'keep // this is not a comment' }] },
      { type: 'codeBlock', attrs: { id: 'c1' }, content: [{ type: 'text', text: 'a = 1\nb = 2' }] },
      { type: 'paragraph', attrs: { id: 'p3' }, content: [{ type: 'text', text: 'line' }] },
    ]);
    expect(toMarkdownIr(stripped)).not.toMatch(/^\/\//m);
  });

  it('strips a comment line beside a block whose only line was a comment (found by the property below)', () => {
    // The inner paragraph loses its content, which leaves its parent inline: the parent's own "// " is a line then.
    const doc: DocumentContent = {
      type: 'doc',
      content: [
        {
          type: 'paragraph',
          attrs: { id: 'b0' },
          content: [{ type: 'a', content: [{ type: 'paragraph', content: [{ type: 'text', text: '// ' }] }, { type: 'text', text: '\n// ' }] }],
        },
      ],
    };
    expect(hasComments(doc)).toBe(true);
    expect(hasComments(stripComments(doc))).toBe(false);
  });

  it('never leaves a comment line after stripping, on generated documents', () => {
    fc.assert(
      fc.property(richDocument, (d) => {
        expect(hasComments(stripComments(d))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
