import { Type, type TObject } from '@sinclair/typebox';
import { AnthropicProvider } from '@trellis/ai-anthropic';
import { DifyProvider } from '@trellis/ai-dify';
import { GeminiProvider } from '@trellis/ai-gemini';
import { OpenAiProvider } from '@trellis/ai-openai';
import { CONF_HINT, confField, readConf, samplingField } from '@trellis/ai-sdk';
import type { AiProvider, TrellisError } from '@trellis/core';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';

const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addVocabulary([CONF_HINT]);

/** The issues `fn` throws (`invalid_model_conf` details), or undefined when it returns. */
const issuesOf = (fn: () => unknown) => {
  try {
    fn();
    return undefined;
  } catch (error) {
    expect((error as TrellisError).code).toBe('invalid_model_conf');
    return (error as TrellisError).details as Array<{ field: string; constraint: string; message: string }>;
  }
};

/** Values tried in every field: right and wrong types, bounds, empty and null. */
const values: unknown[] = [
  undefined,
  null,
  '',
  'x',
  'chat',
  'workflow',
  'openai',
  'compatible',
  'azure',
  'https://h.example/v1/',
  'HTTP://h.example',
  'http://127.0.0.1:11434/v1',
  'ftp://h.example',
  'not a url',
  'h.example/v1',
  0,
  1,
  0.5,
  1.5,
  2,
  2.5,
  -1,
  -3,
  10,
  11,
  7,
  true,
  [],
  ['END'],
  [''],
  ['a', 'b', 'c', 'd'],
  ['a', 'b', 'c', 'd', 'e'],
  [1],
  {},
  { 'x-tenant': 't1' },
  { a: 1 },
  { nested: { ok: true } },
];

/**
 * Issues that come from rules across fields, which a JSON Schema does not say: OpenAI's own API
 * needs an API key and takes no query parameters.
 */
const crossField: Record<string, (issue: { field: string; constraint: string }) => boolean> = {
  openai: (issue) => (issue.field === 'conf.apiKey' && issue.constraint === 'required') || issue.constraint === 'compatibleOnly',
};

const providers: Array<{ provider: AiProvider<any>; base: Record<string, unknown> }> = [
  { provider: new OpenAiProvider(), base: { model: 'gpt-4o-mini', apiKey: 'sk-1' } },
  { provider: new AnthropicProvider(), base: { model: 'claude-haiku-4-5', apiKey: 'sk-ant-1' } },
  { provider: new GeminiProvider(), base: { model: 'gemini-2.5-flash', apiKey: 'AIza-1' } },
  { provider: new DifyProvider(), base: { apiKey: 'app-1' } },
];

describe.each(providers)('the published confSchema of $provider.service', ({ provider, base }) => {
  const schema = provider.confSchema as TObject;
  const validate = ajv.compile(schema);
  const accepts = (conf: unknown) => {
    const issues = issuesOf(() => provider.parseConf(conf as Record<string, unknown>));
    const ignored = crossField[provider.service] ?? (() => false);
    return !issues || issues.every(ignored);
  };

  it('describes every field and refuses keys it does not declare', () => {
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    for (const [key, field] of Object.entries(schema.properties)) {
      expect(typeof (field as { description?: unknown }).description, key).toBe('string');
    }
  });

  it('is accepted by a JSON Schema validator and agrees with parseConf, field by field', () => {
    const samples: unknown[] = [base, {}, { ...base, api_key: 'k' }, 'nope', [], null];
    for (const key of [...Object.keys(schema.properties), 'unknownSetting']) {
      for (const value of values) samples.push({ ...base, [key]: value });
    }
    let accepted = 0;
    for (const sample of samples) {
      const byParseConf = accepts(sample);
      expect(validate(sample), JSON.stringify(sample)).toBe(byParseConf);
      if (byParseConf) accepted += 1;
    }
    // Both answers occur (the samples are not all good or all bad).
    expect(accepted).toBeGreaterThan(20);
    expect(accepted).toBeLessThan(samples.length - 20);
  });
});

describe('readConf', () => {
  const schema = Type.Object(
    {
      model: confField.required('The model.', 'e.g. "m-1"'),
      baseURL: confField.url('The base URL.'),
      mode: confField.oneOf(['a', 'b'] as const, 'The mode.'),
      label: confField.string('A label.'),
      temperature: samplingField.temperature(2),
      maxTokens: samplingField.maxTokens(),
      stop: samplingField.stop(),
      headers: samplingField.headers(),
      extra: confField.object('Anything.'),
    },
    { additionalProperties: false },
  );

  it('answers the settings: null and empty strings unset, URLs without trailing slashes', () => {
    expect(readConf(schema, { model: 'm', baseURL: 'https://h.example/v1//', label: '', mode: null, temperature: 0.5, stop: ['END'] }, 'svc')).toEqual({
      model: 'm',
      baseURL: 'https://h.example/v1',
      temperature: 0.5,
      stop: ['END'],
    });
  });

  it('reports every problem with its constraint and message, in the schema order, unknown keys last', () => {
    const issues = issuesOf(() =>
      readConf(schema, { api_key: 'k', extra: [], headers: { a: 1 }, stop: ['a', 'b', 'c', 'd', 'e'], maxTokens: 1.5, temperature: 3, label: 5, mode: 'c', baseURL: 'ftp://h' }, 'svc'),
    );
    expect(issues).toEqual([
      { field: 'conf.model', constraint: 'required', message: 'conf.model is required for svc (e.g. "m-1").' },
      { field: 'conf.baseURL', constraint: 'isUrl', message: 'conf.baseURL must be an http:// or https:// URL (got "ftp://h").' },
      { field: 'conf.mode', constraint: 'isIn', message: 'conf.mode must be one of "a", "b".' },
      { field: 'conf.label', constraint: 'isString', message: 'conf.label must be a string.' },
      { field: 'conf.temperature', constraint: 'max', message: 'conf.temperature must be at most 2.' },
      { field: 'conf.maxTokens', constraint: 'isInt', message: 'conf.maxTokens must be a whole number.' },
      { field: 'conf.stop', constraint: 'arrayMaxSize', message: 'conf.stop holds at most 4 entries.' },
      { field: 'conf.headers', constraint: 'isStringRecord', message: 'conf.headers must be an object of string values.' },
      { field: 'conf.extra', constraint: 'isObject', message: 'conf.extra must be an object.' },
      { field: 'conf.api_key', constraint: 'unknown', message: 'conf.api_key is not a svc setting.' },
    ]);
  });

  it('names a conf that is not an object, a URL that is not one, and runs the rules across fields on what passed', () => {
    expect(issuesOf(() => readConf(schema, 'nope', 'svc'))?.map((issue) => issue.constraint)).toEqual(['isObject', 'required']);
    expect(issuesOf(() => readConf(schema, { model: 'm', baseURL: 'http://[' }, 'svc'))).toEqual([
      { field: 'conf.baseURL', constraint: 'isUrl', message: 'conf.baseURL must be an absolute http:// or https:// URL (got "http://[").' },
    ]);
    expect(issuesOf(() => readConf(schema, { model: 'm', baseURL: 'h.example' }, 'svc'))?.[0]?.message).toBe('conf.baseURL must be an absolute http:// or https:// URL (got "h.example").');
    const seen: unknown[] = [];
    const issues = issuesOf(() =>
      readConf(schema, { model: 'm', temperature: -1, label: 'l', api_key: 'k' }, 'svc', (settings, fail) => {
        seen.push(settings);
        if (settings.label) fail('model', 'conflict', 'conf.model cannot go with conf.label.');
      }),
    );
    expect(seen).toEqual([{ model: 'm', label: 'l' }]);
    expect(issues?.map((issue) => `${issue.field} ${issue.constraint}`)).toEqual(['conf.model conflict', 'conf.temperature min', 'conf.api_key unknown']);
  });
});
