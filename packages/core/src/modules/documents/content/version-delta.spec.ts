import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { richDocument } from './arbitraries.js';
import { canonicalJson } from './canonical-json.js';
import { contentHash } from './content-hash.js';
import { applyCommands } from './edit-commands.js';
import { prepareDocument, prepareEditedDocument, type DocumentContent, type RichNode } from './rich-text.js';
import { serializeContent } from './serialized-content.js';
import { applyBlockDelta, blockDelta } from './version-delta.js';

const withIds = (doc: DocumentContent) => prepareDocument(doc, (() => { let n = 0; return () => `id${++n}`; })());

describe('serialized content', () => {
  it('is the canonical JSON, its hash and its UTF-8 size, computed once', () => {
    fc.assert(
      fc.property(richDocument, (doc) => {
        const serialized = serializeContent(doc);
        expect(serialized.json).toBe(canonicalJson(doc));
        expect(serialized.hash).toBe(contentHash(doc));
        expect(serialized.bytes).toBe(Buffer.byteLength(canonicalJson(doc), 'utf8'));
        expect(serialized.blocks).toEqual((doc.content ?? []).map((block) => canonicalJson(block)));
      }),
      { numRuns: 200 },
    );
  });

  it('goes on from an earlier serialization of shared blocks to the same text, hash and size', () => {
    const change = fc.constantFrom('replace', 'delete', 'insert', 'append', 'same', 'clear');
    fc.assert(
      fc.property(richDocument, richDocument, fc.nat(), change, (before, other, at, how) => {
        const earlier = serializeContent(before);
        const known = { blocks: new Map((before.content ?? []).map((block, i) => [block, earlier.blocks[i]!])), order: before.content ?? [], states: earlier.states, offsets: earlier.offsets };
        const blocks = [...(before.content ?? [])];
        const fresh = other.content?.[0] ?? { type: 'paragraph', attrs: { id: 'fresh' } };
        const i = blocks.length ? at % blocks.length : 0;
        if (how === 'replace' && blocks.length) blocks[i] = fresh;
        if (how === 'delete') blocks.splice(i, 1);
        if (how === 'insert') blocks.splice(i, 0, fresh);
        if (how === 'append') blocks.push(fresh);
        const after: DocumentContent = how === 'clear' || blocks.length === 0 ? { type: 'doc' } : { type: 'doc', content: blocks };
        const serialized = serializeContent(after, known);
        expect(serialized.json).toBe(canonicalJson(after));
        expect(serialized.hash).toBe(contentHash(after));
        expect(serialized.bytes).toBe(Buffer.byteLength(serialized.json, 'utf8'));
        // And its states serve the next serialization as well as a fresh one's would.
        expect(serialized.states).toEqual(serializeContent(after).states);
      }),
      { numRuns: 300 },
    );
  });

  it('falls back to canonical JSON for a value that is not a plain doc node', () => {
    const odd = { type: 'doc', content: [], extra: { b: 1, a: 2 } } as unknown as DocumentContent;
    expect(serializeContent(odd).json).toBe(canonicalJson(odd));
  });
});

describe('block deltas', () => {
  const nonEmpty = richDocument.filter((doc) => (doc.content?.length ?? 0) > 0).map(withIds);

  it('rebuild the later content exactly from the earlier one, for any two documents', () => {
    fc.assert(
      fc.property(nonEmpty, nonEmpty, (before, after) => {
        const text = blockDelta(before.content!, after.content!, serializeContent(after).blocks);
        expect(canonicalJson(applyBlockDelta(JSON.parse(JSON.stringify(before)), text))).toBe(canonicalJson(after));
      }),
      { numRuns: 200 },
    );
  });

  it('hold only the blocks that changed', () => {
    const blocks = Array.from({ length: 50 }, (_, i): RichNode => ({ type: 'paragraph', attrs: { id: `b${i}` }, content: [{ type: 'text', text: `text ${i}` }] }));
    const before: DocumentContent = { type: 'doc', content: blocks };
    const after: DocumentContent = { type: 'doc', content: [...blocks.slice(0, 20), { type: 'heading', attrs: { id: 'h' } }, ...blocks.slice(21)] };
    const text = blockDelta(before.content!, after.content!, serializeContent(after).blocks);
    expect(JSON.parse(text)).toEqual({ blocks: [{ type: 'heading', attrs: { id: 'h' } }], head: 20, tail: 29 });
    // Equal blocks that are other objects (content read back from the database) count as kept too.
    const copy = JSON.parse(JSON.stringify(before)) as DocumentContent;
    expect(JSON.parse(blockDelta(copy.content!, after.content!, serializeContent(after).blocks))).toMatchObject({ head: 20, tail: 29 });
  });

  it('refuse a base they do not fit', () => {
    expect(() => applyBlockDelta({ type: 'doc', content: [{ type: 'paragraph' }] }, '{"blocks":[],"head":1,"tail":1}')).toThrow(/does not fit/);
  });
});

describe('prepareEditedDocument', () => {
  it('gives what prepareDocument gives on the result of commands, checking only the changed blocks', () => {
    const base = withIds({ type: 'doc', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'alpha beta' }] }, { type: 'paragraph', content: [{ type: 'text', text: 'gamma' }] }] } as DocumentContent);
    const [a, b] = base.content!.map((block) => block.attrs!.id as string);
    const commands = [
      { op: 'str_replace', blockId: a, old_str: 'beta', new_str: 'BETA' },
      { op: 'insert', after: b, block: { type: 'paragraph', content: [{ type: 'text', text: 'x' }, { type: 'text', text: 'y' }] } },
      { op: 'write', blockId: b, content: [{ type: 'text', text: 'g', marks: [{ type: 'italic' }, { type: 'bold' }] }] },
    ];
    let n = 0;
    const outcome = applyCommands(base, commands, () => `new${++n}`);
    const edited = prepareEditedDocument(base, outcome.doc, () => 'unused');
    expect(edited).toEqual(prepareDocument(outcome.doc, () => 'unused'));
    // The stored document is untouched, and unchanged blocks are shared, not copied.
    expect(base.content![0]!.content![0]!.text).toBe('alpha beta');
    const untouched = applyCommands(base, [{ op: 'delete', blockId: a }], () => 'x').doc;
    expect(untouched.content![0]).toBe(base.content![1]);
  });

  it('still refuses a changed block that is not valid', () => {
    const base = withIds({ type: 'doc', content: [{ type: 'paragraph' }] } as DocumentContent);
    const edited = { type: 'doc', content: [base.content![0]!, { type: 'text', text: 'loose' }] } as DocumentContent;
    expect(() => prepareEditedDocument(base, edited, () => 'x')).toThrow(/top-level blocks cannot be text/);
  });
});
