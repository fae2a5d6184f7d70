import { describe, expect, it } from 'vitest';
import { applyCommands, CommandError } from './edit-commands.js';
import { normalizeDocument, type DocumentContent } from './rich-text.js';

let counter = 0;
const newId = () => `new${++counter}`;
const p = (id: string, text: string, name?: string) => ({ type: 'paragraph', attrs: { id, ...(name ? { name } : {}) }, content: [{ type: 'text', text }] });
const base: DocumentContent = normalizeDocument({ type: 'doc', content: [p('a', 'Alpha', 'first'), p('b', 'Beta'), p('c', 'Gamma')] });
const ids = (doc: DocumentContent) => (doc.content ?? []).map((b) => b.attrs!.id);

describe('edit commands', () => {
  it('lists, reads and reads ranges without changing anything', () => {
    const out = applyCommands(base, [{ op: 'list' }, { op: 'read', blockId: 'b' }, { op: 'read_range', from: 'a', to: 'b' }], newId);
    expect(out.changed).toBe(false);
    expect(out.results[0]!.data).toEqual([
      { id: 'a', type: 'paragraph', name: 'first', index: 0 },
      { id: 'b', type: 'paragraph', name: null, index: 1 },
      { id: 'c', type: 'paragraph', name: null, index: 2 },
    ]);
    expect(out.results[1]!.data).toEqual(p('b', 'Beta'));
    expect(out.results[2]!.data).toEqual([p('a', 'Alpha', 'first'), p('b', 'Beta')]);
  });

  it('applies writes in order on a copy', () => {
    const out = applyCommands(
      base,
      [
        { op: 'insert', block: { type: 'paragraph', content: [{ type: 'text', text: 'Start' }] }, after: null },
        { op: 'insert', block: p('z', 'End') },
        { op: 'write', blockId: 'b', content: 'Bravo' },
        { op: 'move', blockId: 'a', after: 'c' },
        { op: 'delete', blockId: 'c' },
        { op: 'replace', blockId: 'z', block: { type: 'heading', attrs: { level: 2 }, content: [{ type: 'text', text: 'Fin' }] } },
        { op: 'str_replace', blockId: 'a', old_str: 'lph', new_str: 'LPH' },
      ],
      newId,
    );
    expect(out.changed).toBe(true);
    expect(ids(out.doc)).toEqual([expect.stringMatching(/^new/), 'b', 'a', 'z']);
    expect(out.doc.content![1]).toEqual(p('b', 'Bravo'));
    expect(out.doc.content![2]).toEqual(p('a', 'ALPHa', 'first'));
    expect(out.doc.content![3]).toEqual({ type: 'heading', attrs: { id: 'z', level: 2 }, content: [{ type: 'text', text: 'Fin' }] });
    expect(ids(base)).toEqual(['a', 'b', 'c']);
  });

  it('replaces text across marks, keeping the marks where the match starts', () => {
    const doc = normalizeDocument({
      type: 'doc',
      content: [{ type: 'paragraph', attrs: { id: 'm' }, content: [{ type: 'text', text: 'Hello ' }, { type: 'text', text: 'big', marks: [{ type: 'bold' }] }, { type: 'text', text: ' world' }] }],
    });
    const out = applyCommands(doc, [{ op: 'str_replace', blockId: 'm', old_str: 'o big w', new_str: 'o small w' }], newId);
    expect(out.doc.content![0]!.content).toEqual([{ type: 'text', text: 'Hello small world' }]);
  });

  it('fails the whole edit at the first failing command, naming it', () => {
    const cases: Array<[unknown[], number, string]> = [
      [[{ op: 'read', blockId: 'nope' }], 0, 'block_not_found'],
      [[{ op: 'list' }, { op: 'jump' }], 1, 'unknown_op'],
      [[{ op: 'insert', block: p('a', 'dup') }], 0, 'duplicate_block_id'],
      [[{ op: 'str_replace', blockId: 'a', old_str: 'zzz', new_str: 'y' }], 0, 'no_match'],
      [[{ op: 'write', blockId: 'c', content: 'x' }, { op: 'str_replace', blockId: 'c', old_str: 'x', new_str: 'y' }, { op: 'str_replace', blockId: 'b', old_str: 'q', new_str: 'E' }], 2, 'no_match'],
      [[{ op: 'write', blockId: 'a', content: 'aa a' }, { op: 'str_replace', blockId: 'a', old_str: 'a', new_str: 'b' }], 1, 'multiple_matches'],
      [[{ op: 'read_range', from: 'c', to: 'a' }], 0, 'invalid_range'],
      [[{ op: 'move', blockId: 'a', after: 'a' }], 0, 'invalid_command'],
      [[{ op: 'insert', block: { type: 'text', text: 'x' } }], 0, 'invalid_block'],
      [[{ op: 'write', blockId: 'a', content: [{ type: 'bad type!' }] }], 0, 'invalid_content'],
      [[{ op: 'delete', blockId: 'a', extra: 1 }], 0, 'invalid_command'],
      [['read'], 0, 'invalid_command'],
    ];
    for (const [commands, index, reason] of cases) {
      try {
        applyCommands(base, commands, newId);
        expect.fail(`expected ${reason}`);
      } catch (error) {
        expect(error).toBeInstanceOf(CommandError);
        expect({ index: (error as CommandError).index, reason: (error as CommandError).reason }).toEqual({ index, reason });
      }
    }
    expect(ids(base)).toEqual(['a', 'b', 'c']);
  });
});
