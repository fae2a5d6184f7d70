/**
 * A small declarative schema for configuration: every value knows its type, default and doc text,
 * unknown keys are rejected, and each problem names the exact path (`server.port`). The same
 * description renders the configuration reference in docs/, so the two cannot drift.
 */
export interface ConfigIssue {
  path: string;
  message: string;
}

export interface Describable {
  readonly description?: string;
}

export interface SchemaNode<T> extends Describable {
  readonly typeName: string;
  readonly hasDefault: boolean;
  readonly defaultValue?: () => T;
  readonly optional: boolean;
  parse(value: unknown, path: string, issues: ConfigIssue[]): T | undefined;
}

type Infer<S> = S extends SchemaNode<infer T> ? T : never;

export abstract class BaseNode<T> implements SchemaNode<T> {
  abstract readonly typeName: string;
  hasDefault = false;
  defaultValue?: () => T;
  optional = false;
  description?: string;

  abstract check(value: unknown, path: string, issues: ConfigIssue[]): T | undefined;

  parse(value: unknown, path: string, issues: ConfigIssue[]): T | undefined {
    if (value === undefined) {
      if (this.defaultValue) return this.defaultValue();
      if (this.optional) return undefined;
      issues.push({ path, message: `is required (${this.typeName})` });
      return undefined;
    }
    return this.check(value, path, issues);
  }

  default(value: T | (() => T)): this {
    this.hasDefault = true;
    this.defaultValue = typeof value === 'function' ? (value as () => T) : () => value;
    return this;
  }

  describe(text: string): this {
    this.description = text;
    return this;
  }

  orUndefined(): BaseNode<T | undefined> {
    this.optional = true;
    return this as BaseNode<T | undefined>;
  }
}

export class StringNode<T extends string = string> extends BaseNode<T> {
  typeName = 'string';
  private minLength = 0;
  private choices?: readonly T[];
  private pattern?: RegExp;
  private patternText?: string;

  min(length: number): this {
    this.minLength = length;
    return this;
  }

  oneOf<const U extends string>(choices: readonly U[]): StringNode<U> {
    const next = this as unknown as StringNode<U>;
    next.choices = choices;
    next.typeName = choices.map((c) => JSON.stringify(c)).join(' | ');
    return next;
  }

  matches(pattern: RegExp, text: string): this {
    this.pattern = pattern;
    this.patternText = text;
    return this;
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): T | undefined {
    if (typeof value !== 'string') {
      issues.push({ path, message: `must be a ${this.typeName}, got ${describeValue(value)}` });
      return undefined;
    }
    if (this.choices && !this.choices.includes(value as T)) {
      issues.push({ path, message: `must be one of ${this.typeName}, got ${JSON.stringify(value)}` });
      return undefined;
    }
    if (value.length < this.minLength) {
      issues.push({ path, message: `must be at least ${this.minLength} characters long` });
      return undefined;
    }
    if (this.pattern && !this.pattern.test(value)) {
      issues.push({ path, message: `must be ${this.patternText}` });
      return undefined;
    }
    return value as T;
  }
}

export class NumberNode extends BaseNode<number> {
  typeName = 'number';
  private integer = false;
  private minimum?: number;
  private maximum?: number;

  int(): this {
    this.integer = true;
    this.typeName = 'integer';
    return this;
  }

  range(min?: number, max?: number): this {
    this.minimum = min;
    this.maximum = max;
    return this;
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): number | undefined {
    // Environment variables arrive as strings: accept a string that is exactly a number.
    const n = typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || (this.integer && !Number.isInteger(n))) {
      issues.push({ path, message: `must be an ${this.typeName === 'integer' ? 'integer' : 'finite number'}, got ${describeValue(value)}` });
      return undefined;
    }
    if (this.minimum !== undefined && n < this.minimum) {
      issues.push({ path, message: `must be >= ${this.minimum}, got ${n}` });
      return undefined;
    }
    if (this.maximum !== undefined && n > this.maximum) {
      issues.push({ path, message: `must be <= ${this.maximum}, got ${n}` });
      return undefined;
    }
    return n;
  }
}

export class BooleanNode extends BaseNode<boolean> {
  typeName = 'boolean';

  check(value: unknown, path: string, issues: ConfigIssue[]): boolean | undefined {
    if (typeof value === 'boolean') return value;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    issues.push({ path, message: `must be a boolean, got ${describeValue(value)}` });
    return undefined;
  }
}

export class ArrayNode<T> extends BaseNode<T[]> {
  readonly typeName: string;

  constructor(readonly item: SchemaNode<T>) {
    super();
    this.typeName = `${item.typeName}[]`;
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): T[] | undefined {
    // A comma-separated string (from an environment variable) is a list.
    const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value;
    if (!Array.isArray(list)) {
      issues.push({ path, message: `must be an array, got ${describeValue(value)}` });
      return undefined;
    }
    const before = issues.length;
    const out = list.map((entry, index) => this.item.parse(entry, `${path}[${index}]`, issues) as T);
    return issues.length === before ? out : undefined;
  }
}

export class RecordNode<T> extends BaseNode<Record<string, T>> {
  readonly typeName: string;

  constructor(readonly item: SchemaNode<T>) {
    super();
    this.typeName = `Record<string, ${item.typeName}>`;
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): Record<string, T> | undefined {
    if (!isPlainObject(value)) {
      issues.push({ path, message: `must be an object, got ${describeValue(value)}` });
      return undefined;
    }
    const out: Record<string, T> = {};
    for (const [key, entry] of Object.entries(value)) {
      out[key] = this.item.parse(entry, join(path, key), issues) as T;
    }
    return out;
  }
}

/** A value that one of several schemas accepts (tried in order; the first that parses wins). */
export class UnionNode<T> extends BaseNode<T> {
  readonly typeName: string;

  constructor(readonly options: readonly SchemaNode<T>[]) {
    super();
    this.typeName = options.map((option) => option.typeName).join(' | ');
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): T | undefined {
    const tried: ConfigIssue[] = [];
    for (const option of this.options) {
      const own: ConfigIssue[] = [];
      const parsed = option.parse(value, path, own);
      if (own.length === 0 && parsed !== undefined) return parsed;
      tried.push(...own);
    }
    issues.push({ path, message: `must be ${this.typeName}: ${tried.map((issue) => issue.message).join('; or ')}` });
    return undefined;
  }
}

export type Shape = Record<string, SchemaNode<unknown>>;
type ObjectOf<S extends Shape> = { [K in keyof S]: Infer<S[K]> };

export class ObjectNode<S extends Shape> extends BaseNode<ObjectOf<S>> {
  typeName = 'object';

  constructor(readonly shape: S) {
    super();
    // An object whose every field has a default is itself defaulted, so nested sections can be omitted.
    if (Object.values(shape).every((node) => node.hasDefault || node.optional)) {
      this.hasDefault = true;
      this.defaultValue = () => this.parse({}, '', []) as ObjectOf<S>;
    }
  }

  check(value: unknown, path: string, issues: ConfigIssue[]): ObjectOf<S> | undefined {
    if (!isPlainObject(value)) {
      issues.push({ path: path || '(root)', message: `must be an object, got ${describeValue(value)}` });
      return undefined;
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      if (!(key in this.shape)) {
        const known = Object.keys(this.shape);
        issues.push({ path: join(path, key), message: `is not a known option${known.length ? ` (known: ${known.join(', ')})` : ''}` });
      }
    }
    for (const [key, node] of Object.entries(this.shape)) {
      const parsed = node.parse(value[key], join(path, key), issues);
      if (parsed !== undefined) out[key] = parsed;
    }
    return out as ObjectOf<S>;
  }

  extend<E extends Shape>(extra: E): ObjectNode<S & E> {
    return new ObjectNode({ ...this.shape, ...extra });
  }
}

export const s = {
  string: () => new StringNode(),
  number: () => new NumberNode(),
  int: () => new NumberNode().int(),
  boolean: () => new BooleanNode(),
  array: <T>(item: SchemaNode<T>) => new ArrayNode(item),
  record: <T>(item: SchemaNode<T>) => new RecordNode(item),
  object: <S extends Shape>(shape: S) => new ObjectNode(shape),
  union: <T extends readonly SchemaNode<unknown>[]>(...options: T) => new UnionNode<Infer<T[number]>>(options as unknown as readonly SchemaNode<Infer<T[number]>>[]),
};

export type InferConfig<S> = Infer<S>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(readonly issues: ConfigIssue[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  - ${i.path}: ${i.message}`).join('\n')}`);
  }
}

export function parseConfig<S extends Shape>(schema: ObjectNode<S>, input: unknown): ObjectOf<S> {
  const issues: ConfigIssue[] = [];
  const value = schema.parse(input ?? {}, '', issues);
  if (issues.length > 0 || value === undefined) throw new ConfigError(issues);
  return deepFreeze(value);
}

/** Rows for the configuration reference: path, type, default and description. */
export function describeSchema(node: SchemaNode<unknown>, path = ''): Array<{ path: string; type: string; default?: string; description?: string }> {
  if (node instanceof ObjectNode) {
    return Object.entries(node.shape as Shape).flatMap(([key, child]) => describeSchema(child, join(path, key)));
  }
  const fallback = node.defaultValue ? node.defaultValue() : undefined;
  return [
    {
      path,
      type: node.typeName,
      default: fallback === undefined ? undefined : JSON.stringify(fallback),
      description: node.description,
    },
  ];
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${typeof value === 'object' ? '' : String(value)}`.trim();
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}
