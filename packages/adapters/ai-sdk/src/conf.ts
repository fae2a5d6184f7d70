import { Type, type Static, type TLiteral, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { aiErrors } from '@trellis/core';

export interface ConfIssue {
  field: string;
  constraint: string;
  message: string;
}

/**
 * Schema keyword: the hint a missing required field's message adds in parentheses
 * (`conf.model is required for anthropic (e.g. "claude-sonnet-4-5").`). An annotation: JSON Schema
 * validators ignore it (give it to ajv with `addVocabulary`).
 */
export const CONF_HINT = 'x-hint';

/**
 * A URL field's pattern: empty (unset), or `http://` / `https://` (any case) and a host. The
 * schema says this much; `readConf` also parses the URL and removes trailing slashes.
 */
export const HTTP_URL_PATTERN = '^$|^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+([/?#]\\S*)?$';

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `T`, or null (which `readConf` reads as unset, like a missing key). */
const unsetOr = <T extends TSchema>(schema: T, description: string, extra: Record<string, unknown> = {}) => Type.Optional(Type.Union([schema, Type.Null()], { description, ...extra }));

/**
 * Builders of the `conf` fields adapters declare, in the shape `readConf` reports on. Optional
 * fields also accept null (unset); an optional string that is empty is unset too.
 */
export const confField = {
  /** A required non-empty string; `hint` (`e.g. "gpt-4o-mini"`) goes into the message when it is missing. */
  required: (description: string, hint?: string) => Type.String({ minLength: 1, description, ...(hint ? { [CONF_HINT]: hint } : {}) }),
  /** An optional string (empty: unset). */
  string: (description: string, extra: { default?: string } = {}) => unsetOr(Type.String(), description, extra),
  /** An optional absolute http(s) URL, read without its trailing slashes. */
  url: (description: string, extra: { default?: string } = {}) => unsetOr(Type.String({ pattern: HTTP_URL_PATTERN }), description, extra),
  /** An optional number in [minimum, maximum]. */
  number: (description: string, range: { minimum?: number; maximum?: number } = {}) => unsetOr(Type.Number(range), description),
  /** An optional whole number in [minimum, maximum]. */
  integer: (description: string, range: { minimum?: number; maximum?: number } = {}) => unsetOr(Type.Integer(range), description),
  /** An optional value among `values`. */
  oneOf: <const T extends readonly string[]>(values: T, description: string, extra: { default?: T[number] } = {}) =>
    unsetOr(Type.Union(values.map((value) => Type.Literal(value)) as TLiteral<T[number]>[]), description, extra),
  /** An optional list of at most `maxItems` non-empty strings. */
  stringList: (description: string, maxItems: number) => unsetOr(Type.Array(Type.String({ minLength: 1 }), { maxItems }), description),
  /** An optional object of string values (HTTP headers, query parameters). */
  stringRecord: (description: string) => unsetOr(Type.Record(Type.String(), Type.String()), description),
  /** An optional JSON object. */
  object: (description: string) => unsetOr(Type.Record(Type.String(), Type.Unknown()), description),
};

/** The settings every AI SDK based adapter may offer, with the vendor's bounds where they differ. */
export const samplingField = {
  temperature: (maximum: number) => confField.number(`Sampling temperature, 0 to ${maximum}.`, { minimum: 0, maximum }),
  topP: () => confField.number('Nucleus sampling: the probability mass to sample from, 0 to 1.', { minimum: 0, maximum: 1 }),
  topK: () => confField.integer('Sample only from the K most likely tokens.', { minimum: 1 }),
  maxTokens: () => confField.integer('The most tokens one answer may have.', { minimum: 1 }),
  stop: () => confField.stringList('Up to 4 sequences that end the answer.', 4),
  seed: () => confField.integer('Seed for sampling that repeats (where the vendor supports it).'),
  presencePenalty: () => confField.number('Penalty for tokens already present, -2 to 2.', { minimum: -2, maximum: 2 }),
  frequencyPenalty: () => confField.number('Penalty by how often a token appeared, -2 to 2.', { minimum: -2, maximum: 2 }),
  headers: () => confField.stringRecord('Extra HTTP headers sent with every call.'),
  maxRetries: () => confField.integer('Retries after a 429 or 5xx before the first part (default: the adapter option, 2).', { minimum: 0, maximum: 10 }),
};

/** A conf as `readConf` answers it: what the schema declares, with null (unset) read as absent. */
export type ConfOf<S extends TObject> = { [K in keyof Static<S>]: Exclude<Static<S>[K], null> };

/** A rule across fields, run after the per-field checks on the fields that passed (the others are absent). */
export type ConfRule<S extends TObject> = (settings: Partial<ConfOf<S>>, fail: (key: string, constraint: string, message: string) => void) => void;

type Field = TSchema & Record<string, unknown>;

/** The field's schema without the null that optional fields accept. */
const declared = (schema: Field): Field => {
  const anyOf = schema.anyOf as Field[] | undefined;
  if (!anyOf) return schema;
  const rest = anyOf.filter((member) => member.type !== 'null');
  return rest.length === 1 ? rest[0]! : { ...schema, anyOf: rest };
};

const quoteList = (values: unknown[]) => values.map((value) => `"${String(value)}"`).join(', ');

/** Why `value` fails the field's schema, in Trellis's words (the constraint names of the API's `details`). */
function issueOf(key: string, field: Field, value: unknown): ConfIssue {
  const path = `conf.${key}`;
  const issue = (constraint: string, message: string): ConfIssue => ({ field: path, constraint, message });
  const schema = declared(field);
  switch (schema.type) {
    case 'string': {
      if (typeof value !== 'string') return issue('isString', `${path} must be a string.`);
      if (typeof schema.pattern === 'string' && schema.pattern === HTTP_URL_PATTERN) {
        let parsed: URL | undefined;
        try {
          parsed = new URL(value);
        } catch {
          parsed = undefined;
        }
        if (parsed && parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return issue('isUrl', `${path} must be an http:// or https:// URL (got "${value}").`);
        return issue('isUrl', `${path} must be an absolute http:// or https:// URL (got "${value}").`);
      }
      if (typeof schema.minLength === 'number' && value.length < schema.minLength) return issue('minLength', `${path} must have at least ${schema.minLength} characters.`);
      if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) return issue('maxLength', `${path} must have at most ${schema.maxLength} characters.`);
      return issue('matches', `${path} does not have the expected form.`);
    }
    case 'number':
    case 'integer': {
      const integer = schema.type === 'integer';
      if (typeof value !== 'number' || !Number.isFinite(value)) return issue(integer ? 'isInt' : 'isNumber', `${path} must be a ${integer ? 'whole ' : ''}number.`);
      if (integer && !Number.isInteger(value)) return issue('isInt', `${path} must be a whole number.`);
      if (typeof schema.minimum === 'number' && value < schema.minimum) return issue('min', `${path} must be at least ${schema.minimum}.`);
      if (typeof schema.maximum === 'number' && value > schema.maximum) return issue('max', `${path} must be at most ${schema.maximum}.`);
      break;
    }
    case 'array': {
      const items = schema.items as Field | undefined;
      if (!Array.isArray(value) || (items && value.some((item) => !Value.Check(items, item)))) return issue('isStringArray', `${path} must be a list of non-empty strings.`);
      if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return issue('arrayMaxSize', `${path} holds at most ${schema.maxItems} entries.`);
      break;
    }
    case 'object': {
      const values = Object.values((schema.patternProperties ?? {}) as Record<string, Field>)[0];
      if (values?.type === 'string') return issue('isStringRecord', `${path} must be an object of string values.`);
      return issue('isObject', `${path} must be an object.`);
    }
    default: {
      const members = (schema.anyOf ?? []) as Field[];
      if (members.length && members.every((member) => 'const' in member)) {
        return issue('isIn', `${path} must be one of ${quoteList(members.map((member) => member.const))}.`);
      }
    }
  }
  return issue('invalid', `${path} is not valid.`);
}

/**
 * Checks a model's `conf` against the adapter's schema (a `Type.Object` of `confField`s, with
 * `additionalProperties: false`), collecting every problem: a required field that is missing, null
 * or empty (`conf.model is required for openai (hint).`), a field that fails its schema, a key the
 * schema does not declare (`conf.api_key is not a openai setting.`), then the problems `rules`
 * finds across fields. Throws one `aiErrors.invalidConf` (422 `invalid_model_conf`) with all of
 * them as `details`, in the schema's field order with unknown keys last, or answers the settings:
 * null and empty optional strings left out, URLs without trailing slashes. Defaults are the
 * adapter's to apply.
 */
export function readConf<S extends TObject>(schema: S, conf: unknown, service: string, rules?: ConfRule<S>): ConfOf<S> {
  const issues: ConfIssue[] = [];
  let input: Record<string, unknown> = {};
  if (isPlainObject(conf)) input = conf;
  else issues.push({ field: 'conf', constraint: 'isObject', message: `conf must be an object of ${service} settings.` });

  const properties = schema.properties as Record<string, Field>;
  const required = new Set(schema.required ?? []);
  const settings: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(properties)) {
    const value = input[key];
    if (value === undefined || value === null || (value === '' && (required.has(key) || declared(field).type === 'string'))) {
      if (required.has(key)) {
        const hint = field[CONF_HINT];
        issues.push({ field: `conf.${key}`, constraint: 'required', message: `conf.${key} is required for ${service}${typeof hint === 'string' && hint ? ` (${hint})` : ''}.` });
      }
      continue;
    }
    if (!Value.Check(field, value)) {
      issues.push(issueOf(key, field, value));
      continue;
    }
    if (declared(field).pattern === HTTP_URL_PATTERN) {
      const url = value as string;
      try {
        new URL(url);
      } catch {
        issues.push({ field: `conf.${key}`, constraint: 'isUrl', message: `conf.${key} must be an absolute http:// or https:// URL (got "${url}").` });
        continue;
      }
      settings[key] = url.replace(/\/+$/, '');
      continue;
    }
    settings[key] = value;
  }

  rules?.(settings as Partial<ConfOf<S>>, (key, constraint, message) => issues.push({ field: `conf.${key}`, constraint, message }));

  if (schema.additionalProperties === false) {
    for (const key of Object.keys(input)) {
      if (!Object.hasOwn(properties, key)) issues.push({ field: `conf.${key}`, constraint: 'unknown', message: `conf.${key} is not a ${service} setting.` });
    }
  }
  if (issues.length) throw aiErrors.invalidConf(sortedIssues(issues, Object.keys(properties)));
  return settings as ConfOf<S>;
}

/** Issues in the schema's field order (the conf itself first, unknown keys last, each group as found). */
function sortedIssues(issues: ConfIssue[], order: string[]): ConfIssue[] {
  const rank = (issue: ConfIssue) => {
    if (issue.field === 'conf') return -1;
    if (issue.constraint === 'unknown') return order.length;
    const at = order.indexOf(issue.field.slice('conf.'.length));
    return at < 0 ? order.length : at;
  };
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => rank(a.issue) - rank(b.issue) || a.index - b.index)
    .map(({ issue }) => issue);
}
