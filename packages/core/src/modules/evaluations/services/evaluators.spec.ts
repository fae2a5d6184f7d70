import { describe, expect, it } from 'vitest';
import { isTrellisError } from '../../../kernel/errors.js';
import { caseScore, evaluatePure, parseEvaluators, valueAt, type EvaluatorSpec } from './evaluators.js';
import { readVerdict } from './judge.js';
import { percentile, summaryOf } from './summary.js';

const run = (raw: Record<string, unknown>, output: unknown, expected: unknown = null) => {
  const [spec] = parseEvaluators([raw]);
  return evaluatePure(spec as Exclude<EvaluatorSpec, { type: 'judge' }>, output, expected);
};

const refused = (raw: unknown, field: string) => {
  try {
    parseEvaluators([raw]);
  } catch (error) {
    expect(isTrellisError(error) && error.code).toBe('invalid_evaluator');
    expect((error as { details?: Array<{ field: string }> }).details?.[0]?.field).toBe(`evaluators[0].${field}`);
    return;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
};

describe('evaluators', () => {
  it('paths pick a field of the output by keys and indexes', () => {
    expect(valueAt({ a: { b: [1, { c: 'x' }] } }, 'a.b.1.c')).toBe('x');
    expect(valueAt({ a: 1 }, 'a.b')).toBeUndefined();
    expect(valueAt({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it('exact: deep JSON equality against the value or the case expectation (at the path), optionally without case', () => {
    expect(run({ type: 'exact' }, { x: 1, y: [2] }, { y: [2], x: 1 }).passed).toBe(true);
    expect(run({ type: 'exact' }, 'Paris', 'paris').passed).toBe(false);
    expect(run({ type: 'exact', caseSensitive: false }, 'Paris', 'paris').passed).toBe(true);
    expect(run({ type: 'exact', path: 'city' }, { city: 'Oslo', n: 2 }, { city: 'Oslo', n: 3 }).passed).toBe(true);
    expect(run({ type: 'exact', path: 'city', value: 'Rome' }, { city: 'Oslo' }, { city: 'Oslo' })).toMatchObject({ passed: false, score: 0, evaluator: 'exact:city', detail: 'expected Rome, got Oslo' });
  });

  it('contains: substring of the text (or JSON text), or an item of a list', () => {
    expect(run({ type: 'contains', value: 'sun' }, 'It is sunny').passed).toBe(true);
    expect(run({ type: 'contains', value: 'SUN' }, 'It is sunny').passed).toBe(false);
    expect(run({ type: 'contains', value: 'SUN', caseSensitive: false }, 'It is sunny').passed).toBe(true);
    expect(run({ type: 'contains' }, [1, { a: 2 }], { a: 2 }).passed).toBe(true);
    expect(run({ type: 'contains' }, [1, 3], 2).passed).toBe(false);
  });

  it('regex: tested against the value; patterns are checked when the evaluation is created', () => {
    expect(run({ type: 'regex', pattern: '^\\d{3}-\\d{4}$' }, '555-1234').passed).toBe(true);
    expect(run({ type: 'regex', pattern: '^abc$', flags: 'i' }, 'ABC').passed).toBe(true);
    expect(run({ type: 'regex', pattern: '^abc$', path: 'a' }, { a: 'abd' }).passed).toBe(false);
    refused({ type: 'regex', pattern: '(' }, 'pattern');
    refused({ type: 'regex', pattern: 'a', flags: 'g' }, 'flags');
  });

  it('jsonSchema: the value (or the JSON a string holds) matches the schema', () => {
    const schema = { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } };
    expect(run({ type: 'jsonSchema', schema }, { n: 3 }).passed).toBe(true);
    expect(run({ type: 'jsonSchema', schema }, '{"n": 4}').passed).toBe(true);
    const failed = run({ type: 'jsonSchema', schema }, { n: 'x' });
    expect(failed.passed).toBe(false);
    expect(failed.detail).toContain('/n');
    refused({ type: 'jsonSchema', schema: { type: 'nope' } }, 'schema');
  });

  it('numeric: within an absolute or relative tolerance; text holding a number counts', () => {
    expect(run({ type: 'numeric', tolerance: 0.01 }, 3.14159, 3.14).passed).toBe(true);
    expect(run({ type: 'numeric', tolerance: 0.001 }, 3.14159, 3.14).passed).toBe(false);
    expect(run({ type: 'numeric', value: 100, tolerance: 0.05, relative: true }, '104').passed).toBe(true);
    expect(run({ type: 'numeric', value: 100, tolerance: 0.05, relative: true }, 106).passed).toBe(false);
    expect(run({ type: 'numeric', value: 1 }, 'one')).toMatchObject({ passed: false, detail: 'one is not a number' });
    refused({ type: 'numeric', tolerance: -1 }, 'tolerance');
  });

  it('refuses unknown types and fields, bad paths, weights and judges', () => {
    refused({ type: 'fuzzy' }, 'type');
    refused({ type: 'exact', pattern: 'x' }, 'pattern');
    refused({ type: 'exact', path: 'a..b' }, 'path');
    refused({ type: 'exact', weight: -2 }, 'weight');
    refused({ type: 'judge', modelId: 'nope', rubric: 'x' }, 'modelId');
    refused({ type: 'judge', modelId: '0193b0a0-0000-7000-8000-000000000000', rubric: ' ' }, 'rubric');
    refused({ type: 'judge', modelId: '0193b0a0-0000-7000-8000-000000000000', rubric: 'ok', threshold: 2 }, 'threshold');
    expect(() => parseEvaluators([])).toThrow();
  });

  it('a case score is the weighted mean of its evaluators', () => {
    const specs = parseEvaluators([{ type: 'exact', weight: 3 }, { type: 'contains', value: 'a' }]);
    expect(caseScore(specs, [{ evaluator: 'exact', score: 1, passed: true, detail: null }, { evaluator: 'contains', score: 0, passed: false, detail: null }])).toBe(0.75);
    expect(caseScore(parseEvaluators([{ type: 'exact', weight: 0 }]), [{ evaluator: 'exact', score: 1, passed: true, detail: null }])).toBeNull();
  });

  it('judge verdicts are read from the first JSON object of the answer, clamped to 0..1', () => {
    expect(readVerdict('Sure. {"score": 0.8, "reason": "close"}')).toEqual({ score: 0.8, reason: 'close' });
    expect(readVerdict('{"score": 7}')).toEqual({ score: 1, reason: '' });
    expect(readVerdict('{"score": "0.25", "reason": "meh"}')).toEqual({ score: 0.25, reason: 'meh' });
    expect(readVerdict('no idea')).toBeNull();
    expect(readVerdict('{"reason": "no score"}')).toBeNull();
  });

  it('summaries count verdicts and take nearest-rank latency percentiles', () => {
    expect(percentile([10, 20, 30, 40], 50)).toBe(20);
    expect(percentile([10, 20, 30, 40], 95)).toBe(40);
    expect(percentile([], 50)).toBeNull();
    const s = summaryOf([
      { status: 'completed', passed: true, score: 1, credits: 2, latencyMs: 10 },
      { status: 'completed', passed: false, score: 0.5, credits: 3, latencyMs: 30 },
      { status: 'errored', passed: false, score: null, credits: 1, latencyMs: 20 },
      { status: 'cancelled', passed: null, score: null, credits: 0, latencyMs: null },
    ]);
    expect(s).toEqual({ cases: 4, passed: 1, failed: 1, errored: 1, meanScore: 0.75, credits: 6, latencyMs: { p50: 20, p95: 30 } });
  });
});
