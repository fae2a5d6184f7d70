import type { Dialect } from '../../../ports/database.js';
import type { VdbField, VdbFilter, VdbScalar } from './filter.js';

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

export interface FilterSqlOptions {
  /** SQL expressions of the two JSON columns (`r.tags`, `r.metadata`). */
  columns: { tags: string; metadata: string };
  /** Placeholder for the n-th parameter (from 1) of the whole statement. Default `?` (MikroORM, knex). */
  placeholder?: (index: number) => string;
  /** Number of parameters that come before this fragment in the statement. */
  offset?: number;
}

/**
 * Compiles a validated filter to a SQL boolean expression over the records' JSON columns:
 * SQLite's JSON1 functions, or PostgreSQL's `jsonb` operators. Every leaf is wrapped so that it is
 * true or false, never NULL, which keeps `NOT` meaning "does not match" for missing fields. The
 * semantics are those of `matchesVdbFilter` (the tests compare both on every dialect).
 */
export function compileVdbFilter(filter: VdbFilter, dialect: Dialect, options: FilterSqlOptions): SqlFragment {
  const params: unknown[] = [];
  const placeholder = options.placeholder ?? (() => '?');
  const offset = options.offset ?? 0;
  const bind = (value: unknown): string => {
    params.push(value);
    return placeholder(offset + params.length);
  };
  const compile = dialect === 'sqlite' ? sqliteCompiler(options.columns, bind) : postgresCompiler(options.columns, bind);
  return { sql: compile(filter), params };
}

type Bind = (value: unknown) => string;

function sqliteCompiler(columns: FilterSqlOptions['columns'], bind: Bind): (filter: VdbFilter) => string {
  const target = (field: VdbField) => ({
    column: field.root === 'tags' ? columns.tags : columns.metadata,
    path: field.root === 'tags' ? '$' : `$${field.path.map((key) => `."${key}"`).join('')}`,
  });
  /** SQLite's json_type / json_each.type of a scalar, and the SQL value json_extract gives for it. */
  const typed = (typeExpr: string, valueExpr: () => string, value: VdbScalar): string => {
    if (value === null) return `${typeExpr} = 'null'`;
    if (typeof value === 'boolean') return `${typeExpr} = '${value ? 'true' : 'false'}'`;
    if (typeof value === 'number') return `(${typeExpr} IN ('integer', 'real') AND ${valueExpr()} = ${bind(value)})`;
    return `(${typeExpr} = 'text' AND ${valueExpr()} = ${bind(value)})`;
  };
  const compile = (filter: VdbFilter): string => {
    switch (filter.op) {
      case 'and':
      case 'or':
        return `(${filter.items.map(compile).join(filter.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${compile(filter.item)})`;
      case 'exists': {
        const { column, path } = target(filter.field);
        return `(json_type(${column}, ${bind(path)}) IS NOT NULL)`;
      }
      case 'contains': {
        const { column, path } = target(filter.field);
        // A cheap necessary condition first: a string element appears in the stored JSON text as
        // its JSON quoting (values are stored as written by JSON.stringify, which escapes only
        // quotes, backslashes and control characters, exactly as json_quote does). It spares
        // parsing the JSON of the rows that cannot match.
        const quick = typeof filter.value === 'string' && plainText(filter.value) ? `instr(${column}, json_quote(${bind(filter.value)})) > 0 AND ` : '';
        const p = bind(path);
        return `COALESCE((${quick}json_type(${column}, ${p}) = 'array' AND EXISTS (SELECT 1 FROM json_each(${column}, ${bind(path)}) AS e WHERE ${typed('e.type', () => 'e.value', filter.value)})), 0)`;
      }
      case 'compare': {
        const { column, path } = target(filter.field);
        const type = `json_type(${column}, ${bind(path)})`;
        // Parameters are bound in the order their placeholders appear, and only when used.
        const value = () => `json_extract(${column}, ${bind(path)})`;
        if (filter.comparison === 'eq') return `COALESCE(${typed(type, value, filter.value)}, 0)`;
        const operator = comparisonOperator[filter.comparison];
        const types = typeof filter.value === 'number' ? `('integer', 'real')` : `('text')`;
        return `COALESCE((${type} IN ${types} AND ${value()} ${operator} ${bind(filter.value)}), 0)`;
      }
    }
  };
  return compile;
}

function postgresCompiler(columns: FilterSqlOptions['columns'], bind: Bind): (filter: VdbFilter) => string {
  const target = (field: VdbField): string =>
    field.root === 'tags' ? `${columns.tags}` : `(${columns.metadata} #> ${bind(`{${field.path.map((key) => `"${key}"`).join(',')}}`)}::text[])`;
  const compile = (filter: VdbFilter): string => {
    switch (filter.op) {
      case 'and':
      case 'or':
        return `(${filter.items.map(compile).join(filter.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${compile(filter.item)})`;
      case 'exists':
        return `(${target(filter.field)} IS NOT NULL)`;
      case 'contains':
        // Each occurrence binds its own parameter: with `?` placeholders they are taken in order.
        return `COALESCE((jsonb_typeof(${target(filter.field)}) = 'array' AND ${target(filter.field)} @> ${bind(JSON.stringify([filter.value]))}::jsonb), false)`;
      case 'compare': {
        const value = () => target(filter.field);
        if (filter.comparison === 'eq') return `COALESCE(${value()} = ${bind(JSON.stringify(filter.value))}::jsonb, false)`;
        const operator = comparisonOperator[filter.comparison];
        if (typeof filter.value === 'number') {
          return `COALESCE(CASE WHEN jsonb_typeof(${value()}) = 'number' THEN (${value()})::numeric ${operator} ${bind(filter.value)}::numeric ELSE false END, false)`;
        }
        return `COALESCE(CASE WHEN jsonb_typeof(${value()}) = 'string' THEN (${value()} #>> '{}') COLLATE "C" ${operator} ${bind(filter.value)}::text ELSE false END, false)`;
      }
    }
  };
  return compile;
}

/** No control characters or lone surrogates: the only characters whose JSON spelling could differ between writers. */
const plainText = (value: string): boolean => [...value].every((char) => char.codePointAt(0)! >= 0x20 && !(char.codePointAt(0)! >= 0xd800 && char.codePointAt(0)! <= 0xdfff));

const comparisonOperator = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
