import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowEvents, rowText, splitJsonStrings, type RunEventText } from './event-text.js';

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

describe('rowText and rowEvents', () => {
  /** An event as the sink makes it: a chunk carries the start of its text (one string per block). */
  const starts = new Map<string, string>();
  const chunkOf = (seq: number, blockId: string, delta: string): RunEventText => {
    let start = starts.get(blockId);
    if (!start) starts.set(blockId, (start = '{"blockId":' + JSON.stringify(blockId) + ',"delta":'));
    return { seq, type: 'block_chunk', json: start + JSON.stringify(delta) + '}', chunk: start };
  };
  const lineEvent = (seq: number, type: string, data: Record<string, unknown>): RunEventText => ({ seq, type, json: JSON.stringify(data) });
  const asStored = (events: readonly RunEventText[]) => events.map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(e.json) as unknown }));

  it('reads back every event of any row, chunks kept compact or not, from text, bytes or a parsed array', () => {
    const event = fc.oneof(
      fc.record({ kind: fc.constant('chunk' as const), blockId: fc.constantFrom('c1', 'b "2"', 'é\n'), delta: fc.string({ unit, maxLength: 8 }), gap: fc.boolean() }),
      fc.record({ kind: fc.constant('line' as const), type: fc.constantFrom('block_chunk', 'block_start', 'run_start'), delta: fc.string({ unit, maxLength: 8 }), gap: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 30 }), fc.nat(5), (specs, skip) => {
        let seq = 1;
        const events = specs.map((spec) => {
          seq += spec.gap ? 2 : 1;
          // A line of type block_chunk is an emit('block_chunk', ..) of any fields: kept as a line.
          return spec.kind === 'chunk' ? chunkOf(seq, spec.blockId, spec.delta) : lineEvent(seq, spec.type, { blockId: 'x', delta: spec.delta, more: 1 });
        });
        const from = Math.min(skip, events.length - 1);
        const text = rowText(events, from, events.length);
        const expected = asStored(events.slice(from));
        expect(rowEvents(text)).toEqual(expected);
        expect(rowEvents(Buffer.from(text))).toEqual(expected);
        expect(rowEvents(JSON.parse(text))).toEqual(expected);
      }),
      { numRuns: 1_000 },
    );
  });

  it('keeps a run of one block\'s chunks with consecutive numbers as one array, and reads rows written before that (lines only)', () => {
    const events = [lineEvent(1, 'block_start', { blockId: 'c1' }), chunkOf(2, 'c1', 'a'), chunkOf(3, 'c1', 'b\n'), chunkOf(5, 'c1', 'c'), chunkOf(6, 'c2', 'd')];
    expect(rowText(events, 0, events.length)).toBe('[{"seq":1,"type":"block_start","data":{"blockId":"c1"}},["c",2,"c1","a","b\\n"],["c",5,"c1","c"],["c",6,"c2","d"]]');
    const old = '[{"seq":2,"type":"block_chunk","data":{"blockId":"c1","delta":"a"}},{"seq":3,"type":"block_chunk","data":{"blockId":"c1","delta":"b\\n"}}]';
    expect(rowEvents(old)).toEqual(asStored(events.slice(1, 3)));
  });
});
