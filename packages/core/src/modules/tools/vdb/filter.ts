import { TrellisError } from '../../../kernel/errors.js';

/**
 * The vector database's filter language (documented in `docs/http/tools.md`). A filter is a JSON
 * object in the style of MongoDB queries:
 *
 * ```json
 * { "tags": "faq", "metadata.year": { "$gte": 2020 }, "$or": [{ "metadata.lang": "zh" }, { "metadata.lang": { "$in": ["en", "fr"] } }] }
 * ```
 *
 * - Fields: `tags` (the record's tag array) and `metadata.<key>[.<key>...]` (keys of letters,
 *   digits, `_` and `-`).
 * - Values are scalars: strings, numbers, booleans, null.
 * - Operators on metadata: `$eq` (also the bare value), `$ne`, `$gt`, `$gte`, `$lt`, `$lte`
 *   (numbers with numbers, strings with strings, by code point), `$in`, `$nin`, `$contains` (the
 *   field is an array holding the value), `$exists`.
 * - Operators on tags: the bare value or `$contains` (holds the tag), `$in` (holds any of),
 *   `$nin` (holds none of), `$all` (holds all of).
 * - Combinators: `$and` and `$or` take arrays of filters, `$not` one filter; several keys in one
 *   object are joined with and.
 * - Equality is type-aware: `1` does not match `"1"`. Comparisons never match a missing field;
 *   `$ne`, `$nin` and `$not` match records that lack the field.
 */
export type { VdbComparison, VdbField, VdbFilter, VdbScalar } from '../../../ports/vector-store.js';
import type { VdbComparison, VdbField, VdbFilter, VdbScalar } from '../../../ports/vector-store.js';

export const VDB_FILTER_LIMITS = Object.freeze({ depth: 8, conditions: 64, inValues: 100, stringLength: 1000 });

const KEY = /^[\p{L}\p{N}_-]{1,64}$/u;

class FilterParser {
  private conditions = 0;

  parse(input: unknown, at: string, depth: number): VdbFilter {
    if (depth > VDB_FILTER_LIMITS.depth) throw invalid(at, `filters nest at most ${VDB_FILTER_LIMITS.depth} levels deep`);
    if (!isPlainObject(input)) throw invalid(at, 'a filter is a JSON object');
    const items: VdbFilter[] = [];
    for (const [key, value] of Object.entries(input)) {
      const here = at ? `${at}.${key}` : key;
      if (key === '$and' || key === '$or') {
        if (!Array.isArray(value) || value.length === 0) throw invalid(here, `${key} takes a non-empty array of filters`);
        items.push({ op: key === '$and' ? 'and' : 'or', items: value.map((item, index) => this.parse(item, `${here}.${index}`, depth + 1)) });
      } else if (key === '$not') {
        items.push({ op: 'not', item: this.parse(value, here, depth + 1) });
      } else if (key.startsWith('$')) {
        throw invalid(here, `unknown operator ${key} (combinators are $and, $or, $not)`);
      } else {
        items.push(this.condition(parseField(key, here), value, here));
      }
    }
    if (items.length === 0) throw invalid(at, 'a filter needs at least one condition');
    return items.length === 1 ? items[0]! : { op: 'and', items };
  }

  private condition(field: VdbField, value: unknown, at: string): VdbFilter {
    if (!isPlainObject(value)) return this.bare(field, value, at);
    const entries = Object.entries(value);
    if (entries.length === 0) throw invalid(at, 'an operator object needs at least one operator');
    const items = entries.map(([operator, operand]) => this.operator(field, operator, operand, `${at}.${operator}`));
    return items.length === 1 ? items[0]! : { op: 'and', items };
  }

  private bare(field: VdbField, value: unknown, at: string): VdbFilter {
    this.count(at);
    const scalar = scalarOf(value, at);
    return field.root === 'tags' ? { op: 'contains', field, value: scalar } : { op: 'compare', field, comparison: 'eq', value: scalar };
  }

  private operator(field: VdbField, operator: string, operand: unknown, at: string): VdbFilter {
    this.count(at);
    const tags = field.root === 'tags';
    switch (operator) {
      case '$eq':
        if (tags) throw invalid(at, 'tags is an array: use $contains, $in, $nin or $all');
        return { op: 'compare', field, comparison: 'eq', value: scalarOf(operand, at) };
      case '$ne':
        if (tags) throw invalid(at, 'tags is an array: use $nin');
        return { op: 'not', item: { op: 'compare', field, comparison: 'eq', value: scalarOf(operand, at) } };
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        if (tags) throw invalid(at, 'tags cannot be compared; use $contains, $in, $nin or $all');
        const bound = scalarOf(operand, at);
        if (typeof bound !== 'number' && typeof bound !== 'string') throw invalid(at, `${operator} takes a number or a string`);
        return { op: 'compare', field, comparison: operator.slice(1) as VdbComparison, value: bound };
      }
      case '$in':
      case '$nin':
      case '$all': {
        if (operator === '$all' && !tags) throw invalid(at, '$all applies to tags; use $contains on metadata arrays');
        const values = listOf(operand, at);
        const each: VdbFilter[] = values.map((value) => (tags ? { op: 'contains', field, value } : { op: 'compare', field, comparison: 'eq', value }));
        const joined: VdbFilter = each.length === 1 ? each[0]! : { op: operator === '$all' ? 'and' : 'or', items: each };
        return operator === '$nin' ? { op: 'not', item: joined } : joined;
      }
      case '$contains':
        return { op: 'contains', field, value: scalarOf(operand, at) };
      case '$exists':
        if (typeof operand !== 'boolean') throw invalid(at, '$exists takes true or false');
        return operand ? { op: 'exists', field } : { op: 'not', item: { op: 'exists', field } };
      default:
        throw invalid(at, `unknown operator ${operator} (use $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $contains, $all, $exists)`);
    }
  }

  private count(at: string): void {
    if (++this.conditions > VDB_FILTER_LIMITS.conditions) throw invalid(at, `a filter has at most ${VDB_FILTER_LIMITS.conditions} conditions`);
  }
}

function parseField(key: string, at: string): VdbField {
  if (key === 'tags') return { root: 'tags', path: [] };
  const [root, ...path] = key.split('.');
  if (root !== 'metadata' || path.length === 0) throw invalid(at, `unknown field ${JSON.stringify(key)}: use "tags" or "metadata.<key>"`);
  if (path.length > 8 || !path.every((part) => KEY.test(part))) throw invalid(at, 'metadata keys are 1 to 64 letters, digits, "_" or "-", at most 8 levels');
  return { root: 'metadata', path };
}

function scalarOf(value: unknown, at: string): VdbScalar {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(at, 'numbers must be finite');
    return value;
  }
  if (typeof value === 'string') {
    if (value.length > VDB_FILTER_LIMITS.stringLength) throw invalid(at, `strings are at most ${VDB_FILTER_LIMITS.stringLength} characters`);
    return value;
  }
  throw invalid(at, 'values are strings, numbers, booleans or null');
}

function listOf(value: unknown, at: string): VdbScalar[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > VDB_FILTER_LIMITS.inValues) {
    throw invalid(at, `takes an array of 1 to ${VDB_FILTER_LIMITS.inValues} values`);
  }
  return value.map((item, index) => scalarOf(item, `${at}.${index}`));
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (field: string, message: string) =>
  new TrellisError('bad_request', 'invalid_filter', `Invalid filter at ${field || '(top)'}: ${message}.`, {
    details: [{ field: field || '', constraint: 'filter', message }],
  });

/** Validates a filter object (400 `invalid_filter` naming the offending path). `undefined` and `{}` mean no filter. */
export function parseVdbFilter(input: unknown, at = 'filter'): VdbFilter | null {
  if (input === undefined || input === null) return null;
  if (isPlainObject(input) && Object.keys(input).length === 0) return null;
  return new FilterParser().parse(input, at, 1);
}

/** Parses the `where` query parameter: a JSON object in the filter language. */
export function parseWhereParameter(where: string | undefined): VdbFilter | null {
  if (where === undefined || where.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(where);
  } catch {
    throw invalid('where', 'where must be a JSON object (URL-encoded)');
  }
  return parseVdbFilter(parsed, 'where');
}

/** Evaluates a filter against a record in memory (the reference semantics the SQL compilers follow). */
export function matchesVdbFilter(filter: VdbFilter, record: { tags: readonly unknown[]; metadata: Readonly<Record<string, unknown>> }): boolean {
  switch (filter.op) {
    case 'and':
      return filter.items.every((item) => matchesVdbFilter(item, record));
    case 'or':
      return filter.items.some((item) => matchesVdbFilter(item, record));
    case 'not':
      return !matchesVdbFilter(filter.item, record);
    case 'exists':
      return resolve(filter.field, record) !== undefined;
    case 'contains': {
      const value = resolve(filter.field, record);
      return Array.isArray(value) && value.some((item) => sameScalar(item, filter.value));
    }
    case 'compare': {
      const value = resolve(filter.field, record);
      if (filter.comparison === 'eq') return sameScalar(value, filter.value);
      const bound = filter.value;
      if (typeof value !== typeof bound || (typeof value !== 'number' && typeof value !== 'string')) return false;
      const order = typeof value === 'number' ? value - (bound as number) : value < (bound as string) ? -1 : value > (bound as string) ? 1 : 0;
      return filter.comparison === 'gt' ? order > 0 : filter.comparison === 'gte' ? order >= 0 : filter.comparison === 'lt' ? order < 0 : order <= 0;
    }
  }
}

function resolve(field: VdbField, record: { tags: readonly unknown[]; metadata: Readonly<Record<string, unknown>> }): unknown {
  if (field.root === 'tags') return record.tags;
  let value: unknown = record.metadata;
  for (const key of field.path) {
    if (!isPlainObject(value) || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

const sameScalar = (a: unknown, b: VdbScalar): boolean => (b === null ? a === null : typeof a === typeof b && a === b);
