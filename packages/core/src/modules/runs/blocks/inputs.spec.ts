import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { deploymentInputDefinitions, inputsSchema, validateInputs, type InputDefinition } from './inputs.js';

const definitions: InputDefinition[] = [
  { name: 'topic', type: 'string', required: true, description: 'What to write about' },
  { name: 'count', type: 'integer', required: false, default: 3 },
  { name: 'ratio', type: 'number', required: false },
  { name: 'tags', type: 'array', required: false },
  { name: 'options', type: 'object', required: false },
  { name: 'flag', type: 'boolean', required: true },
  { name: 'free', type: 'any', required: false },
];

describe('run inputs, declared once', () => {
  it('the published schema says what validation accepts', () => {
    const schema = JSON.parse(JSON.stringify(inputsSchema(definitions)));
    expect(schema.required).toEqual(['topic', 'flag']);
    expect(schema.properties.topic).toEqual({ type: 'string', description: 'What to write about' });
    expect(schema.properties.count).toMatchObject({ type: 'integer', default: 3 });
    const ajv = new Ajv({ strict: false });
    const check = ajv.compile(schema);
    const samples: Record<string, unknown>[] = [
      { topic: 'a', flag: true },
      { topic: 'a', flag: true, count: 2, ratio: 0.5, tags: [1], options: { a: 1 }, free: 'x' },
      { topic: 1, flag: true },
      { topic: 'a', flag: 'yes' },
      { topic: 'a', flag: true, count: 1.5 },
      { topic: 'a', flag: true, tags: {} },
      { topic: 'a', flag: true, options: [] },
      { topic: 'a', flag: true, ratio: '1' },
      { topic: 'a' },
    ];
    for (const sample of samples) {
      const { issues } = validateInputs(definitions, sample);
      expect(issues.length === 0, JSON.stringify(sample)).toBe(check(sample));
    }
  });

  it('names the rule that failed and applies defaults', () => {
    expect(validateInputs(definitions, { topic: 'x', flag: true }).values).toEqual({ topic: 'x', count: 3, ratio: null, tags: null, options: null, flag: true, free: null });
    expect(validateInputs(definitions, { flag: true, count: 2 ** 60, extra: 1 }).issues).toEqual([
      { field: 'inputs.extra', constraint: 'unknown', message: 'no input block is named "extra"' },
      { field: 'inputs.topic', constraint: 'required', message: 'is required (What to write about)' },
      { field: 'inputs.count', constraint: 'isInteger', message: 'must be an integer' },
    ]);
  });

  it("a deployment's input of an unknown type is not checked", () => {
    const [definition] = deploymentInputDefinitions([{ name: 'x', type: 'file', required: true }])!;
    expect(definition!.type).toBe('any');
    expect(validateInputs([definition!], { x: { any: 'thing' } }).issues).toEqual([]);
    expect(deploymentInputDefinitions([])).toBeUndefined();
  });
});
