import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { richDocument, normalizeDocument, type DocumentContent } from '../../documents/index.js';
import { ensureElementIds, FRAGMENT_NAME, readDocument, replaceContent, writeDocument } from './rich-text-yjs.js';

const toY = (doc: Parameters<typeof writeDocument>[1]) => {
  const ydoc = new Y.Doc();
  ydoc.transact(() => writeDocument(ydoc.getXmlFragment(FRAGMENT_NAME), doc));
  return ydoc;
};

describe('rich-text JSON and Yjs', () => {
  it('round-trips generated documents through a Y.XmlFragment', () => {
    fc.assert(
      fc.property(richDocument, (doc) => {
        const ydoc = toY(doc);
        expect(readDocument(ydoc.getXmlFragment(FRAGMENT_NAME))).toEqual(doc);
        // and through the wire: a second replica built from the encoded state reads the same
        const replica = new Y.Doc();
        Y.applyUpdate(replica, Y.encodeStateAsUpdate(ydoc));
        expect(readDocument(replica.getXmlFragment(FRAGMENT_NAME))).toEqual(doc);
      }),
      { numRuns: 300 },
    );
  });

  it('turns any document into any other, keeping blocks that did not change', () => {
    fc.assert(
      fc.property(richDocument, richDocument, (a, b) => {
        const ydoc = toY(a);
        const fragment = ydoc.getXmlFragment(FRAGMENT_NAME);
        ydoc.transact(() => replaceContent(fragment, b));
        expect(readDocument(fragment)).toEqual(b);
      }),
      { numRuns: 200 },
    );
    const a = normalizeDocument({ type: 'doc', content: [1, 2, 3].map((n) => ({ type: 'paragraph', attrs: { id: `p${n}` }, content: [{ type: 'text', text: `t${n}` }] })) });
    const ydoc = toY(a);
    const fragment = ydoc.getXmlFragment(FRAGMENT_NAME);
    const [first, , third] = fragment.toArray();
    const b = normalizeDocument({ type: 'doc', content: [a.content![0], { type: 'paragraph', attrs: { id: 'p2' }, content: [{ type: 'text', text: 'changed' }] }, a.content![2]] });
    ydoc.transact(() => replaceContent(fragment, b));
    expect(fragment.get(0)).toBe(first);
    expect(fragment.get(2)).toBe(third);
  });

  it('refuses an attribute key named __proto__, which a replica decoded from the wire would turn into a prototype (the value lost)', () => {
    // Generated documents held such keys from JSON.parse; the copy made by normalizeDocument then
    // set a prototype instead, and the document read back from Yjs failed validation (null).
    const doc = JSON.parse('{"type":"doc","content":[{"type":"paragraph","attrs":{"id":"b0"},"marks":[{"type":"bold","attrs":{" ":{"__proto__":[]}}}]}]}') as unknown;
    expect(() => normalizeDocument(doc)).toThrow(/__proto__/);
    const nested = JSON.parse('{"type":"doc","content":[{"type":"x-widget","attrs":{"id":"w","conf":{"list":[{"__proto__":{"a":1}}]}}}]}') as unknown;
    expect(() => normalizeDocument(nested)).toThrow(/__proto__/);
  });

  it('stores attribute values that are objects without a prototype (Yjs refused them: "Unexpected content type")', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { nested: Object.create(null) as object, list: [Object.create(null) as object] });
    const doc = { type: 'doc', content: [{ type: 'x-widget', attrs: { id: 'w', conf: bare } }] } as unknown as DocumentContent;
    const ydoc = new Y.Doc();
    const fragment = ydoc.getXmlFragment(FRAGMENT_NAME);
    ydoc.transact(() => replaceContent(fragment, doc));
    expect(readDocument(fragment)).toEqual({ type: 'doc', content: [{ type: 'x-widget', attrs: { id: 'w', conf: { nested: {}, list: [{}] } } }] });
  });

  it('reads marks written by y-prosemirror, including hashed names of overlapping marks', () => {
    const ydoc = new Y.Doc();
    const fragment = ydoc.getXmlFragment(FRAGMENT_NAME);
    const paragraph = new Y.XmlElement('paragraph');
    fragment.insert(0, [paragraph]);
    paragraph.setAttribute('id', 'p');
    const text = new Y.XmlText();
    paragraph.insert(0, [text]);
    text.insert(0, 'hi', { bold: {}, 'comment--abcd1234': { id: 1 }, 'comment--ffff0000': { id: 2 } });
    expect(readDocument(fragment)).toEqual({
      type: 'doc',
      content: [{ type: 'paragraph', attrs: { id: 'p' }, content: [{ type: 'text', text: 'hi', marks: [{ type: 'bold' }, { type: 'comment', attrs: { id: 1 } }, { type: 'comment', attrs: { id: 2 } }] }] }],
    });
  });

  it('gives top-level elements missing or repeated ids fresh ones', () => {
    const ydoc = new Y.Doc();
    const fragment = ydoc.getXmlFragment(FRAGMENT_NAME);
    const a = new Y.XmlElement('paragraph');
    const b = new Y.XmlElement('paragraph');
    const c = new Y.XmlElement('paragraph');
    fragment.insert(0, [a, b, c]);
    a.setAttribute('id', 'same');
    b.setAttribute('id', 'same');
    let n = 0;
    expect(ensureElementIds(fragment, () => `id${++n}`)).toBe(true);
    expect(fragment.toArray().map((e) => (e as Y.XmlElement).getAttribute('id'))).toEqual(['same', 'id1', 'id2']);
    expect(ensureElementIds(fragment, () => 'never')).toBe(false);
  });
});
