import { Environment, type ParseError } from '@marcbachmann/cel-js';
import { TrellisError } from '../../../../kernel/errors.js';

/**
 * Expressions of control flow (`when`, `items`, `until`): CEL (https://cel.dev), a language with
 * no statements, no loops but the list macros, no I/O and no access to the host, evaluated by
 * `@marcbachmann/cel-js`. Never JavaScript. Bounds (docs/runs.md, "Expressions"):
 *
 * - the source is at most `MAX_EXPRESSION_LENGTH` characters, parsed into at most
 *   `MAX_EXPRESSION_NODES` nodes nested at most 32 deep;
 * - at most `MAX_EXPRESSION_MACROS` list macros (`map`, `filter`, `all`, `exists`, `exists_one`);
 * - the variables it reads hold at most `MAX_EXPRESSION_INPUT_VALUES` values in all (so a macro
 *   inside a macro visits at most that number squared);
 * - its result is at most `MAX_EXPRESSION_RESULT_BYTES` of JSON.
 *
 * Integers in block outputs are CEL `int`s, other numbers `double`s (CEL does not mix them:
 * `x * 2.0` for a double x). Results come back as JSON values (ints as numbers).
 */
export const MAX_EXPRESSION_LENGTH = 2_000;
export const MAX_EXPRESSION_NODES = 1_000;
export const MAX_EXPRESSION_MACROS = 2;
export const MAX_EXPRESSION_INPUT_VALUES = 20_000;
export const MAX_EXPRESSION_RESULT_BYTES = 64 * 1024;

const environment = new Environment({
  unlistedVariablesAreDyn: true,
  homogeneousAggregateLiterals: false,
  limits: { maxAstNodes: MAX_EXPRESSION_NODES, maxDepth: 32, maxListElements: 1_000, maxMapEntries: 1_000, maxCallArguments: 32 },
});

const MACRO = /\.\s*(?:map|filter|all|exists_one|exists)\s*\(/g;
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/g;

/** A problem with an expression: `position` is the 0-based offset in its source. */
export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly position: number,
    readonly reason: string,
  ) {
    super(message);
  }
}

export interface CompiledExpression {
  readonly source: string;
  /** Evaluates with `variables` (JSON values by name); throws `ExpressionError`. */
  evaluate(variables: ReadonlyMap<string, unknown>): unknown;
}

interface CelError {
  summary?: string;
  message: string;
  code?: string;
  range?: { start: number; end: number };
}

const positionOf = (error: unknown) => (error as CelError).range?.start ?? 0;
const summaryOf = (error: unknown) => (error as CelError).summary ?? (error as Error).message.split('\n')[0]!;

/** Parses `source`; throws `ExpressionError` when it is not a valid, bounded expression. */
export function compileExpression(source: string): CompiledExpression {
  if (source.length > MAX_EXPRESSION_LENGTH) throw new ExpressionError(`an expression is at most ${MAX_EXPRESSION_LENGTH} characters`, MAX_EXPRESSION_LENGTH, 'expression_too_long');
  if (!source.trim()) throw new ExpressionError('the expression is empty', 0, 'expression_empty');
  const macros = [...source.matchAll(MACRO)];
  if (macros.length > MAX_EXPRESSION_MACROS) throw new ExpressionError(`an expression uses at most ${MAX_EXPRESSION_MACROS} list macros`, macros[MAX_EXPRESSION_MACROS]!.index!, 'expression_too_costly');
  let program: (context: Record<string, unknown>) => unknown;
  try {
    program = environment.parse(source) as unknown as (context: Record<string, unknown>) => unknown;
  } catch (error) {
    throw new ExpressionError(summaryOf(error as ParseError), positionOf(error), 'expression_invalid');
  }
  const names = new Set(source.match(IDENTIFIER) ?? []);
  return {
    source,
    evaluate(variables) {
      const budget = { left: MAX_EXPRESSION_INPUT_VALUES };
      const context: Record<string, unknown> = {};
      for (const name of names) if (variables.has(name)) context[name] = toCel(variables.get(name), budget);
      if (budget.left < 0) throw new ExpressionError(`the values an expression reads hold at most ${MAX_EXPRESSION_INPUT_VALUES} items`, 0, 'expression_too_costly');
      let result: unknown;
      try {
        result = program(context);
      } catch (error) {
        throw new ExpressionError(summaryOf(error), positionOf(error), 'expression_failed');
      }
      const json = fromCel(result);
      if (JSON.stringify(json ?? null).length > MAX_EXPRESSION_RESULT_BYTES) throw new ExpressionError(`an expression's result is at most ${MAX_EXPRESSION_RESULT_BYTES} bytes of JSON`, 0, 'expression_too_costly');
      return json;
    },
  };
}

/** JSON → CEL values: safe integers become `int` (BigInt). Counts values against the budget. */
function toCel(value: unknown, budget: { left: number }): unknown {
  budget.left -= 1;
  if (budget.left < 0) return null;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map((item) => toCel(item, budget));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = toCel(item, budget);
    return out;
  }
  return value ?? null;
}

/** CEL values → JSON: ints become numbers (an int past 2^53 a string), maps objects. */
function fromCel(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(fromCel);
  if (value instanceof Map) return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), fromCel(v)]));
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value instanceof Date) return value.toISOString();
  if (value && typeof value === 'object') {
    if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return String(value);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromCel(v)]));
  }
  return value ?? null;
}

/** An expression's failure as a block's error: `block_error` carries the position in the expression. */
export function expressionFailure(error: ExpressionError, attr: string): TrellisError {
  return new TrellisError('bad_request', 'expression_failed', `${attr}: ${error.message} (at position ${error.position} of the expression)`, { extra: { position: error.position } });
}

/** Whether an expression's value counts as true (`when`, `until`): only the boolean true does. */
export const holds = (value: unknown): boolean => value === true;
