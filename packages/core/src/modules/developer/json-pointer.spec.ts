import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPointer, JsonPointerSyntaxError, parsePointer, resolvePointer } from './json-pointer.js';

// The example document of RFC 6901, section 5.
const rfcDocument = {
  foo: ['bar', 'baz'],
  '': 0,
  'a/b': 1,
  'c%d': 2,
  'e^f': 3,
  'g|h': 4,
  'i\\j': 5,
  'k"l': 6,
  ' ': 7,
  'm~n': 8,
};

const value = (pointer: string) => {
  const result = resolvePointer(rfcDocument, pointer);
  if (!result.found) throw new Error(`${pointer} not found`);
  return result.value;
};

describe('JSON Pointer (RFC 6901)', () => {
  it('evaluates the string representations of section 5', () => {
    expect(value('')).toBe(rfcDocument);
    expect(value('/foo')).toEqual(['bar', 'baz']);
    expect(value('/foo/0')).toBe('bar');
    expect(value('/')).toBe(0);
    expect(value('/a~1b')).toBe(1);
    expect(value('/c%d')).toBe(2);
    expect(value('/e^f')).toBe(3);
    expect(value('/g|h')).toBe(4);
    expect(value('/i\\j')).toBe(5);
    expect(value('/k"l')).toBe(6);
    expect(value('/ ')).toBe(7);
    expect(value('/m~0n')).toBe(8);
  });

  it('evaluates the URI fragment representations of section 6', () => {
    expect(value('#')).toBe(rfcDocument);
    expect(value('#/foo')).toEqual(['bar', 'baz']);
    expect(value('#/foo/0')).toBe('bar');
    expect(value('#/')).toBe(0);
    expect(value('#/a~1b')).toBe(1);
    expect(value('#/c%25d')).toBe(2);
    expect(value('#/e%5Ef')).toBe(3);
    expect(value('#/g%7Ch')).toBe(4);
    expect(value('#/i%5Cj')).toBe(5);
    expect(value('#/k%22l')).toBe(6);
    expect(value('#/%20')).toBe(7);
    expect(value('#/m~0n')).toBe(8);
  });

  it('decodes ~1 before ~0, so ~01 is the literal ~1', () => {
    expect(parsePointer('/~01')).toEqual(['~1']);
    expect(resolvePointer({ '~1': 'tilde-one', '/': 'slash' }, '/~01')).toEqual({ found: true, value: 'tilde-one' });
    expect(resolvePointer({ '~1': 'tilde-one', '/': 'slash' }, '/~1')).toEqual({ found: true, value: 'slash' });
  });

  it('refuses malformed pointers', () => {
    for (const bad of ['foo', 'foo/bar', '/~', '/a~2', '/~a', '#%E0%A4%A']) {
      expect(() => parsePointer(bad), bad).toThrow(JsonPointerSyntaxError);
    }
  });

  it('reports members and elements that do not exist', () => {
    expect(resolvePointer(rfcDocument, '/nope')).toEqual({ found: false });
    expect(resolvePointer(rfcDocument, '/foo/2')).toEqual({ found: false });
    expect(resolvePointer(rfcDocument, '/foo/-')).toEqual({ found: false });
    expect(resolvePointer(rfcDocument, '/foo/01')).toEqual({ found: false });
    expect(resolvePointer(rfcDocument, '/foo/0/x')).toEqual({ found: false });
    expect(resolvePointer(rfcDocument, '/constructor')).toEqual({ found: false });
    expect(resolvePointer({ a: null }, '/a')).toEqual({ found: true, value: null });
    expect(resolvePointer({ a: null }, '/a/b')).toEqual({ found: false });
  });

  it('formats tokens so that parsing gives them back', () => {
    expect(formatPointer(['a/b', 'm~n', ''])).toBe('/a~1b/m~0n/');
    fc.assert(
      fc.property(fc.array(fc.string()), (tokens) => {
        expect(parsePointer(formatPointer(tokens))).toEqual(tokens);
      }),
    );
  });

  it('finds every leaf of a random document at the pointer built from its path', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.dictionary(fc.string(), fc.integer())), (doc) => {
        for (const [outer, inner] of Object.entries(doc)) {
          for (const [key, leaf] of Object.entries(inner)) {
            expect(resolvePointer(doc, formatPointer([outer, key]))).toEqual({ found: true, value: leaf });
          }
        }
      }),
    );
  });
});
