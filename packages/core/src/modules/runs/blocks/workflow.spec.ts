import { describe, expect, it } from 'vitest';
import { TrellisError } from '../../../kernel/errors.js';
import { renderDeep, renderTemplate, renderValue } from './template.js';
import { inputDefinitions, parseWorkflow, validateInputs } from './workflow.js';

const fail = (details: unknown) => Object.assign(new Error('invalid'), { details });

describe('templates', () => {
  const ctx = new Map<string, unknown>([
    ['topic', 'gardens'],
    ['data', { list: [{ name: 'rose' }], n: 3 }],
    ['empty', null],
  ]);

  it('replaces references with strings as they are and other values as JSON', () => {
    expect(renderTemplate('About {{ topic }} and {{data.list.0.name}}: {{ data.n }} {{ data }}{{empty}}.', ctx)).toBe('About gardens and rose: 3 {"list":[{"name":"rose"}],"n":3}.');
    expect(renderTemplate('{{ data.missing.deep }}|', ctx)).toBe('|');
  });

  it('keeps the JSON type of a template that is one reference alone', () => {
    expect(renderValue(' {{ data.n }} ', ctx)).toBe(3);
    expect(renderValue('n={{ data.n }}', ctx)).toBe('n=3');
    expect(renderDeep({ a: ['{{ data.list }}', 'x {{ topic }}'], b: 1 }, ctx)).toEqual({ a: [[{ name: 'rose' }], 'x gardens'], b: 1 });
  });

  it('refuses a name that is not in the context', () => {
    const error = (() => {
      try {
        renderTemplate('{{ later }}', ctx);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TrellisError);
    expect((error as TrellisError).code).toBe('unknown_reference');
  });
});

describe('workflow parsing and inputs', () => {
  const doc = (...content: unknown[]) => ({ type: 'doc', content });

  it('classifies blocks; codeBlock runs only as javascript or js', () => {
    const blocks = parseWorkflow(
      doc(
        { type: 'heading', attrs: { id: 'h' }, content: [{ type: 'text', text: 'Title' }] },
        { type: 'codeBlock', attrs: { id: 'c1', language: 'JS' }, content: [{ type: 'text', text: 'return 1' }] },
        { type: 'codeBlock', attrs: { id: 'c2', language: 'python' }, content: [{ type: 'text', text: 'print(1)' }] },
        { type: 'inputBlock', attrs: { id: 'i', name: 'q' } },
        { type: 'outputBlock', attrs: { id: 'o' }, content: [{ type: 'text', text: '{{ q }}' }] },
      ),
      fail,
    );
    expect(blocks.map((b) => [b.name, b.kind])).toEqual([
      ['h', 'text'],
      ['c1', 'code'],
      ['c2', 'text'],
      ['q', 'input'],
      ['o', 'output'],
    ]);
    expect(blocks[0]!.text).toBe('Title');
  });

  it('reports every block that cannot run, with its path', () => {
    try {
      parseWorkflow(doc({ type: 'llmBlock', attrs: { id: 'a', name: 'x' } }, { type: 'toolBlock', attrs: { id: 'b', name: 'x', tool: 't' } }, { type: 'askBlock', attrs: { id: 'c', onError: 'maybe' } }), fail);
      expect.unreachable();
    } catch (error) {
      const fields = (error as { details: Array<{ field: string; constraint: string }> }).details.map((d) => `${d.field}:${d.constraint}`);
      expect(fields).toEqual(['content.0.attrs.model:required', 'content.0.attrs.prompt:required', 'content.1.attrs.name:unique', 'content.1.attrs.action:required', 'content.2.attrs.onError:isIn', 'content.2.attrs.question:required']);
    }
  });

  it('checks inputs against the input blocks and applies defaults', () => {
    const blocks = parseWorkflow(
      doc(
        { type: 'inputBlock', attrs: { id: '1', name: 'a', type: 'string', required: true } },
        { type: 'inputBlock', attrs: { id: '2', name: 'b', type: 'integer', default: 7 } },
        { type: 'inputBlock', attrs: { id: '3', name: 'c', type: 'object' } },
        { type: 'inputBlock', attrs: { id: '4', name: 'd', type: 'array' } },
      ),
      fail,
    );
    const defs = inputDefinitions(blocks);
    expect(validateInputs(defs, { a: 'x', c: { k: 1 } })).toEqual({ values: { a: 'x', b: 7, c: { k: 1 }, d: null }, issues: [] });
    const { issues } = validateInputs(defs, { b: 1.5, c: [1], d: {}, e: 1 });
    expect(issues.map((i) => `${i.field}:${i.constraint}`)).toEqual(['inputs.e:unknown', 'inputs.a:required', 'inputs.b:isInteger', 'inputs.c:isObject', 'inputs.d:isArray']);
  });
});
