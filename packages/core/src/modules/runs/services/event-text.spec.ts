import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitJsonStrings } from './event-text.js';

/** Characters that JSON escapes or that could be mistaken for the text between two strings, and any UTF-16 code unit. */
const unit = fc.oneof(
  fc.constantFrom('"', '\\', ',', '","', '"]', '["', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udc00', '\ud83d\ude00', 'é', '€', 'a'),
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
);

describe('splitJsonStrings', () => {
  it('gives the text between the quotes of each string and the UTF-8 bytes of their values, for any strings', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit, maxLength: 12 }), { minLength: 1, maxLength: 20 }), (strings) => {
        const split = splitJsonStrings(JSON.stringify(strings));
        expect(split).not.toBeNull();
        expect(split!.bodies.map((body) => JSON.parse(`"${body}"`) as string)).toEqual(strings);
        expect(split!.bytes).toBe(strings.reduce((sum, s) => sum + Buffer.byteLength(s), 0));
      }),
      { numRuns: 2_000 },
    );
  });

  it('counts an escaped surrogate pair as the four bytes of its character', () => {
    expect(splitJsonStrings('["\\ud83d\\ude00","x"]')).toEqual({ bodies: ['\\ud83d\\ude00', 'x'], bytes: 5 });
  });

  it('answers null for any other text', () => {
    for (const json of ['[]', '', '[1]', '["a",1]', '[ "a" ]', '"a"', '{"a":"b"}', '["a",1,"b"]', '["a",null,"b"]', '["a\\\\",{"b":"c"},"d"]', '["a\\"",1,"b"]']) {
      expect(splitJsonStrings(json)).toBeNull();
    }
  });
});
