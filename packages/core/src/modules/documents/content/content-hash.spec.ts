import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, compareCodePoints } from './canonical-json.js';
import { contentHash } from './content-hash.js';
import { fnv1a32, fnv1a32Hex, fnv1a32Utf8 } from './fnv1a.js';

describe('FNV-1a 32', () => {
  // Test vectors from the FNV reference test suite (Fowler, Noll, Vo: test_fnv.c, FNV-1a 32).
  const vectors: Array<[string, string]> = [
    ['', '811c9dc5'],
    ['a', 'e40c292c'],
    ['b', 'e70c2de5'],
    ['c', 'e60c2c52'],
    ['d', 'e10c2473'],
    ['e', 'e00c22e0'],
    ['f', 'e30c2799'],
    ['fo', '6222e842'],
    ['foo', 'a9f37ed7'],
    ['foob', '3f5076ef'],
    ['fooba', '39aaa18a'],
    ['foobar', 'bf9cf968'],
  ];
  it.each(vectors)('hashes %j to %s', (input, expected) => {
    expect(fnv1a32Hex(input)).toBe(expected);
  });

  it('hashes and counts UTF-8 bytes walking the string as over its encoded bytes (unpaired surrogates as U+FFFD)', () => {
    const units = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 });
    fc.assert(
      fc.property(fc.oneof(units, fc.string({ unit: 'binary' })), (s) => {
        const bytes = new TextEncoder().encode(s);
        expect(fnv1a32Utf8(s)).toEqual({ hash: fnv1a32(bytes), bytes: bytes.length });
      }),
      { numRuns: 500 },
    );
    expect(fnv1a32Utf8('\ud800')).toEqual({ hash: fnv1a32(new TextEncoder().encode('\ufffd')), bytes: 3 });
  });

  it('always answers 8 lowercase hexadecimal digits', () => {
    fc.assert(fc.property(fc.string(), (s) => /^[0-9a-f]{8}$/.test(fnv1a32Hex(s))));
  });
});

describe('canonical JSON', () => {
  it('sorts keys at every level and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: null, y: 'x' }], c: true } })).toBe('{"a":{"c":true,"d":[1,{"y":"x","z":null}]},"b":1}');
  });

  it('orders keys by code point, not by UTF-16 unit', () => {
    // U+FF5E (a BMP character above the surrogates) sorts before U+1F600 by code point.
    expect(compareCodePoints('\uff5e', '\u{1f600}')).toBeLessThan(0);
    expect(canonicalJson({ '\u{1f600}': 1, '\uff5e': 2, a: 3 })).toBe('{"a":3,"\uff5e":2,"\u{1f600}":1}');
  });

  it('does not depend on key order (as jsonb reorders keys)', () => {
    const shuffle = (value: unknown, seed: number): unknown => {
      if (Array.isArray(value)) return value.map((v, i) => shuffle(v, seed + i));
      if (value && typeof value === 'object') {
        const entries = Object.entries(value);
        entries.sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 31 + seed) % 7) || (seed % 2 ? 1 : -1));
        return Object.fromEntries(entries.map(([k, v]) => [k, shuffle(v, seed + 1)]));
      }
      return value;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 1000 }), (value, seed) => {
        expect(contentHash(shuffle(value, seed))).toBe(contentHash(value));
        expect(contentHash(JSON.parse(JSON.stringify(value)))).toBe(contentHash(value));
      }),
    );
  });

  it('writes everything else as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
    expect(canonicalJson('line\n"quoted"\u2028')).toBe(JSON.stringify('line\n"quoted"\u2028'));
    expect(canonicalJson(1e21)).toBe('1e+21');
  });

  it('hashes a document as FNV-1a of its canonical JSON', () => {
    const doc = { type: 'doc', content: [{ type: 'paragraph', attrs: { id: 'p1' } }] };
    expect(contentHash(doc)).toBe(fnv1a32Hex('{"content":[{"attrs":{"id":"p1"},"type":"paragraph"}],"type":"doc"}'));
  });
});
