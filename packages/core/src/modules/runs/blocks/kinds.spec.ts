import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { fromMarkdownIr, toMarkdownIr, normalizeDocument } from '../../documents/index.js';
import { attrIssue } from './attrs.js';
import { defineBlockKind, type BlockKindDefinition } from './kind.js';
import { builtinBlockKinds } from './kinds/index.js';
import { BlockKinds } from './registry.js';
import { parseWorkflow } from './workflow.js';

const fail = (details: unknown) => Object.assign(new Error('invalid'), { details });
const doc = (...content: unknown[]) => ({ type: 'doc', content });
const text = (value: string) => [{ type: 'text', text: value }];

/** The `field:constraint:message` of every problem `parseWorkflow` reports (none: []). */
function problems(content: unknown, kinds?: BlockKinds): string[] {
  try {
    parseWorkflow(content, fail, kinds);
    return [];
  } catch (error) {
    return (error as { details: Array<{ field: string; constraint: string; message: string }> }).details.map((d) => `${d.field}:${d.constraint}:${d.message}`);
  }
}

const shout = defineBlockKind({
  kind: 'shout',
  nodeType: 'shoutBlock',
  attrs: Type.Object({
    times: Type.Integer({ minimum: 1, maximum: 5, ...attrIssue('isIn', 'must be a whole number from 1 to 5') }),
    suffix: Type.Optional(Type.String()),
  }),
  replayable: true,
  executor: () => ({
    kind: 'shout',
    // `block.attrs` is typed by the schema: `times` is a number, `suffix` a string or undefined.
    execute: async (block) => ({ output: `${block.text.toUpperCase()}${(block.attrs.suffix ?? '!').repeat(block.attrs.times)}` }),
  }),
});

describe('built-in block kinds', () => {
  it('declare distinct kinds and node types, each with its schema and replayability', () => {
    expect(builtinBlockKinds.map((k) => [k.kind, k.nodeType, k.replayable])).toEqual([
      ['input', 'inputBlock', true],
      ['llm', 'llmBlock', false],
      ['code', 'codeBlock', true],
      ['tool', 'toolBlock', false],
      ['ask', 'askBlock', false],
      ['output', 'outputBlock', true],
      ['subworkflow', 'subworkflowBlock', false],
      ['http', 'httpBlock', false],
    ]);
    for (const kind of builtinBlockKinds) expect(kind.attrs.type).toBe('object');
  });

  it('report wrong attrs per field, with the kind\'s own constraint and message', () => {
    expect(
      problems(
        doc(
          { type: 'inputBlock', attrs: { id: 'i', type: 'date', required: 'yes' } },
          { type: 'llmBlock', attrs: { id: 'l', model: '', tools: ['a', 3], temperature: 'hot' }, content: text('Hi') },
          { type: 'toolBlock', attrs: { id: 't', tool: 'x', action: 'go', args: [1] } },
          { type: 'askBlock', attrs: { id: 'a', question: null } },
          { type: 'outputBlock', attrs: { id: 'o', value: 42 } },
        ),
      ),
    ).toEqual([
      'content.0.attrs.name:required:an input block needs a name',
      'content.0.attrs.type:isIn:must be one of string, number, integer, boolean, object, array',
      'content.0.attrs.required:isBoolean:must be a boolean',
      'content.1.attrs.model:required:an LLM block needs a model id',
      'content.1.attrs.temperature:isNumber:must be a number',
      'content.1.attrs.tools:isArray:must be an array of AI tool ids',
      'content.2.attrs.args:isObject:must be an object',
      'content.3.attrs.question:required:an ask block needs a question (attrs.question or its text)',
      'content.4.attrs.value:isString:must be a string',
    ]);
  });

  it('accept null for an optional text attr (an editor\'s unset attr) and other attrs they do not declare', () => {
    const blocks = parseWorkflow(
      doc(
        { type: 'llmBlock', attrs: { id: 'l', model: 'm', prompt: null, system: null, temperature: null, color: 'red' }, content: text('Hi') },
        { type: 'askBlock', attrs: { id: 'a', question: 'Ok?' } },
      ),
      fail,
    );
    expect(blocks.map((b) => [b.kind, b.replayable])).toEqual([
      ['llm', false],
      ['ask', false],
    ]);
  });
});

describe('the block kind registry', () => {
  const kinds = new BlockKinds([...builtinBlockKinds, shout as BlockKindDefinition]);

  it('classifies a registered kind\'s node and validates its attrs by its schema', () => {
    const [block] = parseWorkflow(doc({ type: 'shoutBlock', attrs: { id: 's', name: 'loud', times: 2 }, content: text('hey') }), fail, kinds);
    expect(block).toMatchObject({ kind: 'shout', name: 'loud', replayable: true, attrs: { times: 2 } });
    expect(problems(doc({ type: 'shoutBlock', attrs: { id: 's', times: 9, suffix: 1 } }), kinds)).toEqual([
      'content.0.attrs.times:isIn:must be a whole number from 1 to 5',
      'content.0.attrs.suffix:isString:must be a string',
    ]);
    // Without the kind registered, the same node is a text block.
    expect(parseWorkflow(doc({ type: 'shoutBlock', attrs: { id: 's', times: 9 } }), fail)[0]!.kind).toBe('text');
  });

  it('makes one executor per kind that runs with the typed attrs', async () => {
    const executors = kinds.executors({ get: () => ({ maxToolRounds: 1, codeTimeoutMs: 1, codeMemoryBytes: 1 }) as never, optional: () => undefined });
    expect([...executors.keys()]).toEqual(['input', 'llm', 'code', 'tool', 'ask', 'output', 'subworkflow', 'http', 'shout']);
    const [block] = parseWorkflow(doc({ type: 'shoutBlock', attrs: { id: 's', times: 3, suffix: '?' }, content: text('hey') }), fail, kinds);
    await expect(executors.get('shout')!.execute(block!, {} as never)).resolves.toEqual({ output: 'HEY???' });
  });

  it('refuses a second kind of the same name, a node type taken twice, or the reserved name text', () => {
    expect(() => new BlockKinds([...builtinBlockKinds, { ...shout, kind: 'llm' } as BlockKindDefinition])).toThrow(/Two block kinds are named "llm"/);
    expect(() => new BlockKinds([shout, { ...shout, kind: 'whisper' }] as BlockKindDefinition[])).toThrow(/both take every shoutBlock node/);
    expect(() => new BlockKinds([{ ...shout, kind: 'text' } as BlockKindDefinition])).toThrow(/reserved/);
    // Kinds that say which nodes they accept may share a node type (code takes javascript code blocks).
    const python = { ...shout, kind: 'python', nodeType: 'codeBlock', accepts: (a: Readonly<Record<string, unknown>>) => a.language === 'python' } as BlockKindDefinition;
    const both = new BlockKinds([...builtinBlockKinds, python]);
    const blocks = parseWorkflow(
      doc({ type: 'codeBlock', attrs: { id: 'a', language: 'js' }, content: text('return 1') }, { type: 'codeBlock', attrs: { id: 'b', language: 'python', times: 1 }, content: text('1') }),
      fail,
      both,
    );
    expect(blocks.map((b) => b.kind)).toEqual(['code', 'python']);
  });
});

describe('block nodes in markdown-ir', () => {
  it('round-trip for every kind, and parse back to the same workflow', () => {
    const kinds = new BlockKinds([...builtinBlockKinds, shout as BlockKindDefinition]);
    const content = normalizeDocument(
      doc(
        { type: 'inputBlock', attrs: { id: 'i', name: 'topic', type: 'string', required: true, description: 'What about' } },
        { type: 'llmBlock', attrs: { id: 'l', name: 'draft', model: 'm1', tools: ['t1'], system: 'Be brief.', temperature: 0.2 }, content: text('Write about {{ topic }}.') },
        { type: 'codeBlock', attrs: { id: 'c', name: 'count', language: 'javascript' }, content: text('return blocks.draft.length;\n// {{ not a template }}') },
        { type: 'toolBlock', attrs: { id: 't', name: 'fetch', tool: 't1', action: 'get', args: { q: '{{ topic }}', n: [1, { deep: null }] } } },
        { type: 'askBlock', attrs: { id: 'a', name: 'ok' }, content: text('Publish [{{ draft }}]?') },
        { type: 'httpBlock', attrs: { id: 'h', name: 'post', method: 'PUT', url: '{{ toolUrl }}/items?q={{ topic }}', headers: { 'X-Note': ':::{{ draft }}' }, body: { text: '{{ draft }}', tags: ['a', { n: 1 }] }, responseType: 'text' } },
        { type: 'shoutBlock', attrs: { id: 's', name: 'loud', times: 2 }, content: text('done: {yes}') },
        { type: 'outputBlock', attrs: { id: 'o', name: 'result', value: '{{ draft }}' } },
      ),
    );
    const back = normalizeDocument(fromMarkdownIr(toMarkdownIr(content)));
    expect(back).toEqual(content);
    const strip = (blocks: ReturnType<typeof parseWorkflow>) => blocks.map(({ kind, name, attrs, text: body, replayable }) => ({ kind, name, attrs, body, replayable }));
    expect(strip(parseWorkflow(back, fail, kinds))).toEqual(strip(parseWorkflow(content, fail, kinds)));
    expect(parseWorkflow(back, fail, kinds).map((b) => b.kind)).toEqual(['input', 'llm', 'code', 'tool', 'ask', 'http', 'shout', 'output']);
  });
});
