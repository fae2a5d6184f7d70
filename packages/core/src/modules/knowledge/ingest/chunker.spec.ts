import { describe, expect, it } from 'vitest';
import { chunkDocument } from './chunker.js';

const doc = [
  '# Guide',
  '',
  'Intro paragraph about the product. It has two sentences.',
  '',
  '## Billing',
  '',
  'Invoices are sent monthly. Refunds take five days. Contact billing for disputes.',
  '',
  '## Security',
  '',
  'Passwords are hashed with argon2id.',
].join('\n');

describe('chunkDocument', () => {
  it('keeps heading paths, exact offsets and parent links', () => {
    const chunks = chunkDocument({ text: doc, pages: [] }, { chunkTokens: 8, overlapTokens: 0, parentTokens: 200 });
    for (const chunk of chunks) expect(doc.slice(chunk.start, chunk.end)).toBe(chunk.text);
    const parents = chunks.filter((c) => c.role === 'parent');
    expect(parents.map((p) => p.headingPath)).toEqual([['Guide'], ['Guide', 'Billing'], ['Guide', 'Security']]);
    const billingChildren = chunks.filter((c) => c.role === 'child' && c.parent === 1);
    expect(billingChildren.map((c) => c.text)).toEqual(['Invoices are sent monthly.', 'Refunds take five days.', 'Contact billing for disputes.']);
    for (const child of chunks.filter((c) => c.role === 'child')) {
      const parent = parents[child.parent!]!;
      expect(child.start).toBeGreaterThanOrEqual(parent.start);
      expect(child.end).toBeLessThanOrEqual(parent.end);
      expect(child.tokens).toBeLessThanOrEqual(8);
    }
  });

  it('overlaps neighbouring chunks by whole sentences within the overlap', () => {
    const text = Array.from({ length: 12 }, (_, i) => `Sentence number ${i} is here.`).join(' ');
    const chunks = chunkDocument({ text, pages: [] }, { chunkTokens: 20, overlapTokens: 7, parentTokens: 0 });
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((c) => c.role === 'child' && c.parent === null && c.tokens <= 20)).toBe(true);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start).toBeLessThan(chunks[i - 1]!.end);
    expect(chunks[chunks.length - 1]!.end).toBe(text.length);
  });

  it('cuts an overlong sentence into runs of words, and maps offsets to pages', () => {
    const long = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const text = `First page text.\n\n${long}`;
    const chunks = chunkDocument({ text, pages: [{ page: 1, start: 0, end: 16 }, { page: 2, start: 18, end: text.length }] }, { chunkTokens: 50, overlapTokens: 0, parentTokens: 0 });
    expect(chunks[0]!.page).toBe(1);
    expect(chunks.slice(1).every((c) => c.page === 2 && c.tokens <= 50)).toBe(true);
    expect(chunks.slice(1).map((c) => c.text).join(' ')).toBe(long);
  });
});
