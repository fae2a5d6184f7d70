import type { ValidateFunction } from 'ajv';
import { lazyAjv } from '../../../kernel/ajv.js';
import { TrellisError } from '../../../kernel/errors.js';

/** The evaluator kinds (docs/evaluations.md). */
export const evaluatorTypes = ['exact', 'contains', 'regex', 'jsonSchema', 'numeric', 'judge'] as const;
export type EvaluatorType = (typeof evaluatorTypes)[number];

interface Common {
  /** Which field of the output is judged: dot-separated keys and array indexes (`answer.items.0`); absent: the whole output. */
  path?: string;
  /** The evaluator's share of the case's score (default 1). */
  weight?: number;
}

/**
 * An evaluator as stored with an evaluation. Where an expectation is needed (`exact`, `contains`,
 * `numeric`) and `value` is absent, it is the case's `expected`, taken at `path` when `expected`
 * is an object holding that path.
 */
export type EvaluatorSpec = Common &
  (
    | { type: 'exact'; value?: unknown; caseSensitive?: boolean }
    | { type: 'contains'; value?: string; caseSensitive?: boolean }
    | { type: 'regex'; pattern: string; flags?: string }
    | { type: 'jsonSchema'; schema: Record<string, unknown> }
    | { type: 'numeric'; value?: number; tolerance?: number; relative?: boolean }
    | { type: 'judge'; modelId: string; rubric: string; threshold?: number }
  );

/** One evaluator's verdict on one case. */
export interface EvaluatorScore {
  /** The evaluator's label: its type, and its path when it has one (`exact:answer`). */
  evaluator: string;
  score: number;
  passed: boolean;
  detail: string | null;
  /** Credits a judge's model call cost (0 for the others). */
  credits?: number;
}

/** Limits on what evaluators read and hold (docs/evaluations.md). */
export const evaluatorLimits = {
  evaluators: 20,
  pathLength: 200,
  patternLength: 500,
  /** A regex is tested against the first this many characters of the value. */
  regexInput: 100_000,
  rubricLength: 4_000,
  schemaBytes: 32_768,
} as const;

const invalid = (index: number, field: string, message: string) =>
  new TrellisError('validation', 'invalid_evaluator', `evaluators[${index}].${field}: ${message}`, {
    details: [{ field: `evaluators[${index}].${field}`, constraint: 'evaluator', message }],
  });

const PATH = /^[^.\s]{1,100}(\.[^.\s]{1,100})*$/;

/** The value at a dot path (`a.b.0`), or undefined when the path leads nowhere. */
export function valueAt(value: unknown, path: string | undefined): unknown {
  if (!path) return value;
  let current: unknown = value;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The expectation an evaluator compares with: its own `value`, else the case's `expected` (at `path` when it holds it). */
function expectationOf(spec: { value?: unknown; path?: string }, expected: unknown): unknown {
  if (spec.value !== undefined) return spec.value;
  if (spec.path && expected !== null && typeof expected === 'object') {
    const at = valueAt(expected, spec.path);
    if (at !== undefined) return at;
  }
  return expected;
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value));

/** Deep equality of JSON values (object key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((item, i) => jsonEqual(item, (b as unknown[])[i]));
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const ajv = lazyAjv({ allErrors: false, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

function schemaValidator(schema: Record<string, unknown>): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = ajv().compile(schema)));
  return validate;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const known: Record<EvaluatorType, readonly string[]> = {
  exact: ['value', 'caseSensitive'],
  contains: ['value', 'caseSensitive'],
  regex: ['pattern', 'flags'],
  jsonSchema: ['schema'],
  numeric: ['value', 'tolerance', 'relative'],
  judge: ['modelId', 'rubric', 'threshold'],
};

/**
 * Checks evaluators as a request sends them and returns them as stored: 422 `invalid_evaluator`
 * naming the field for an unknown type, a regex or JSON Schema that does not compile, a bad path.
 */
export function parseEvaluators(input: unknown): EvaluatorSpec[] {
  if (!Array.isArray(input) || input.length === 0) throw invalid(0, 'type', 'send 1 or more evaluators');
  if (input.length > evaluatorLimits.evaluators) throw invalid(evaluatorLimits.evaluators, 'type', `at most ${evaluatorLimits.evaluators} evaluators`);
  return input.map((raw, i) => {
    if (!isObject(raw)) throw invalid(i, 'type', 'must be an object');
    const type = raw.type as EvaluatorType;
    if (!(evaluatorTypes as readonly string[]).includes(type as string)) throw invalid(i, 'type', `must be one of ${evaluatorTypes.join(', ')}`);
    for (const key of Object.keys(raw)) if (!['type', 'path', 'weight', ...known[type]].includes(key)) throw invalid(i, key, `is not a field of a ${type} evaluator`);
    const common: Common = {};
    if (raw.path !== undefined) {
      if (typeof raw.path !== 'string' || raw.path.length > evaluatorLimits.pathLength || !PATH.test(raw.path)) throw invalid(i, 'path', 'must be keys and array indexes separated by dots, such as answer.items.0');
      common.path = raw.path;
    }
    if (raw.weight !== undefined) {
      if (typeof raw.weight !== 'number' || !Number.isFinite(raw.weight) || raw.weight < 0 || raw.weight > 1000) throw invalid(i, 'weight', 'must be a number from 0 to 1000');
      common.weight = raw.weight;
    }
    const bool = (key: string): boolean | undefined => {
      if (raw[key] === undefined) return undefined;
      if (typeof raw[key] !== 'boolean') throw invalid(i, key, 'must be a boolean');
      return raw[key] as boolean;
    };
    switch (type) {
      case 'exact': {
        const caseSensitive = bool('caseSensitive');
        return { type, ...common, ...(raw.value !== undefined ? { value: raw.value } : {}), ...(caseSensitive !== undefined ? { caseSensitive } : {}) };
      }
      case 'contains': {
        if (raw.value !== undefined && (typeof raw.value !== 'string' || raw.value.length === 0 || raw.value.length > 10_000)) throw invalid(i, 'value', 'must be a string of 1 to 10000 characters');
        const caseSensitive = bool('caseSensitive');
        return { type, ...common, ...(raw.value !== undefined ? { value: raw.value as string } : {}), ...(caseSensitive !== undefined ? { caseSensitive } : {}) };
      }
      case 'regex': {
        if (typeof raw.pattern !== 'string' || raw.pattern.length === 0 || raw.pattern.length > evaluatorLimits.patternLength) throw invalid(i, 'pattern', `must be a string of 1 to ${evaluatorLimits.patternLength} characters`);
        if (raw.flags !== undefined && (typeof raw.flags !== 'string' || !/^[imsu]{0,4}$/.test(raw.flags))) throw invalid(i, 'flags', 'must be made of the flags i, m, s and u');
        try {
          new RegExp(raw.pattern, (raw.flags as string | undefined) ?? '');
        } catch (error) {
          throw invalid(i, 'pattern', (error as Error).message);
        }
        return { type, ...common, pattern: raw.pattern, ...(raw.flags ? { flags: raw.flags as string } : {}) };
      }
      case 'jsonSchema': {
        if (!isObject(raw.schema)) throw invalid(i, 'schema', 'must be a JSON Schema object');
        if (JSON.stringify(raw.schema).length > evaluatorLimits.schemaBytes) throw invalid(i, 'schema', `must be at most ${evaluatorLimits.schemaBytes} bytes as JSON`);
        try {
          ajv().compile(raw.schema);
        } catch (error) {
          throw invalid(i, 'schema', (error as Error).message);
        }
        return { type, ...common, schema: raw.schema };
      }
      case 'numeric': {
        const num = (key: string, min: number): number | undefined => {
          if (raw[key] === undefined) return undefined;
          if (typeof raw[key] !== 'number' || !Number.isFinite(raw[key]) || (raw[key] as number) < min) throw invalid(i, key, min === 0 ? 'must be a number of 0 or more' : 'must be a finite number');
          return raw[key] as number;
        };
        const value = num('value', -Number.MAX_VALUE);
        const tolerance = num('tolerance', 0);
        const relative = bool('relative');
        return { type, ...common, ...(value !== undefined ? { value } : {}), ...(tolerance !== undefined ? { tolerance } : {}), ...(relative !== undefined ? { relative } : {}) };
      }
      case 'judge': {
        if (typeof raw.modelId !== 'string' || !/^[0-9a-f-]{36}$/i.test(raw.modelId)) throw invalid(i, 'modelId', 'must be the id of an AI model (GET /ai/models)');
        if (typeof raw.rubric !== 'string' || raw.rubric.trim().length === 0 || raw.rubric.length > evaluatorLimits.rubricLength) throw invalid(i, 'rubric', `must be a text of 1 to ${evaluatorLimits.rubricLength} characters`);
        if (raw.threshold !== undefined && (typeof raw.threshold !== 'number' || !(raw.threshold >= 0 && raw.threshold <= 1))) throw invalid(i, 'threshold', 'must be a number from 0 to 1');
        return { type, ...common, modelId: raw.modelId.toLowerCase(), rubric: raw.rubric, ...(raw.threshold !== undefined ? { threshold: raw.threshold as number } : {}) };
      }
    }
  });
}

/** The label a score carries: the evaluator's type, and `:path` when it judges a field. */
export const labelOf = (spec: EvaluatorSpec): string => (spec.path ? `${spec.type}:${spec.path}` : spec.type);

const verdict = (spec: EvaluatorSpec, passed: boolean, detail: string | null, score = passed ? 1 : 0): EvaluatorScore => ({ evaluator: labelOf(spec), score, passed, detail });

const clip = (text: string, max = 120) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * Scores one output with an evaluator that needs no model (every kind but `judge`): 1 and passed,
 * or 0 and failed, with a detail saying why it failed.
 */
export function evaluatePure(spec: Exclude<EvaluatorSpec, { type: 'judge' }>, output: unknown, expected: unknown): EvaluatorScore {
  const actual = valueAt(output, spec.path);
  switch (spec.type) {
    case 'exact': {
      const want = expectationOf(spec, expected);
      const same =
        spec.caseSensitive === false && typeof actual === 'string' && typeof want === 'string' ? actual.toLowerCase() === want.toLowerCase() : jsonEqual(actual, want);
      return verdict(spec, same, same ? null : `expected ${clip(textOf(want))}, got ${clip(textOf(actual))}`);
    }
    case 'contains': {
      const want = expectationOf(spec, expected);
      if (Array.isArray(actual) && typeof want !== 'string') {
        const found = actual.some((item) => jsonEqual(item, want));
        return verdict(spec, found, found ? null : `the list holds no ${clip(textOf(want))}`);
      }
      const needle = textOf(want);
      const hay = textOf(actual);
      const found = needle.length > 0 && (spec.caseSensitive === false ? hay.toLowerCase().includes(needle.toLowerCase()) : hay.includes(needle));
      return verdict(spec, found, found ? null : `${clip(JSON.stringify(needle))} is not in ${clip(JSON.stringify(hay))}`);
    }
    case 'regex': {
      const text = textOf(actual).slice(0, evaluatorLimits.regexInput);
      const matched = new RegExp(spec.pattern, spec.flags ?? '').test(text);
      return verdict(spec, matched, matched ? null : `/${clip(spec.pattern)}/ does not match ${clip(JSON.stringify(text))}`);
    }
    case 'jsonSchema': {
      let value = actual;
      if (typeof value === 'string') {
        try {
          value = JSON.parse(value);
        } catch {
          // Not JSON text: judged as the string it is.
        }
      }
      const validate = schemaValidator(spec.schema);
      const valid = validate(value);
      const first = validate.errors?.[0];
      return verdict(spec, valid, valid ? null : `${first?.instancePath || '/'} ${first?.message ?? 'does not match the schema'}`);
    }
    case 'numeric': {
      const want = Number(expectationOf(spec, expected));
      const got = typeof actual === 'number' ? actual : typeof actual === 'string' && actual.trim() !== '' ? Number(actual) : Number.NaN;
      if (!Number.isFinite(got)) return verdict(spec, false, `${clip(textOf(actual))} is not a number`);
      if (!Number.isFinite(want)) return verdict(spec, false, 'no numeric expectation (value, or the case\'s expected)');
      const tolerance = spec.tolerance ?? 0;
      const allowed = spec.relative ? Math.abs(want) * tolerance : tolerance;
      const off = Math.abs(got - want);
      const ok = off <= allowed;
      return verdict(spec, ok, ok ? null : `${got} is ${off} from ${want} (tolerance ${allowed})`);
    }
  }
}

/** A case's score: the weighted mean of its evaluators' scores (null when every weight is 0). */
export function caseScore(specs: readonly EvaluatorSpec[], scores: readonly EvaluatorScore[]): number | null {
  let total = 0;
  let weights = 0;
  specs.forEach((spec, i) => {
    const weight = spec.weight ?? 1;
    total += weight * (scores[i]?.score ?? 0);
    weights += weight;
  });
  return weights > 0 ? total / weights : null;
}
