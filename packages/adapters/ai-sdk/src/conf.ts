import { aiErrors } from '@trellis/core';

export interface ConfIssue {
  field: string;
  constraint: string;
  message: string;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads a model's `conf` field by field, collecting every problem, then `done()` throws one
 * `aiErrors.invalidConf` (422 `invalid_model_conf`) with all of them as `details`, or returns.
 * Keys nobody read are refused too (`unknown`), so a typo such as `api_key` is named, not ignored.
 */
export class ConfReader {
  readonly issues: ConfIssue[] = [];
  private readonly seen = new Set<string>();
  private readonly conf: Record<string, unknown>;

  constructor(conf: unknown, private readonly service: string) {
    if (isPlainObject(conf)) this.conf = conf;
    else {
      this.conf = {};
      this.issues.push({ field: 'conf', constraint: 'isObject', message: `conf must be an object of ${service} settings.` });
    }
  }

  private value(key: string): unknown {
    this.seen.add(key);
    const value = this.conf[key];
    return value === null ? undefined : value;
  }

  private issue(key: string, constraint: string, message: string): undefined {
    this.issues.push({ field: `conf.${key}`, constraint, message });
    return undefined;
  }

  /** A required non-empty string. */
  requiredString(key: string, hint = ''): string {
    const value = this.value(key);
    if (value === undefined || value === '') {
      this.issue(key, 'required', `conf.${key} is required for ${this.service}${hint ? ` (${hint})` : ''}.`);
      return '';
    }
    if (typeof value !== 'string') {
      this.issue(key, 'isString', `conf.${key} must be a string.`);
      return '';
    }
    return value;
  }

  /** An optional non-empty string. */
  string(key: string): string | undefined {
    const value = this.value(key);
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') return this.issue(key, 'isString', `conf.${key} must be a string.`);
    return value;
  }

  /** An optional http(s) URL, returned without a trailing slash. */
  url(key: string): string | undefined {
    const value = this.string(key);
    if (value === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      return this.issue(key, 'isUrl', `conf.${key} must be an absolute http:// or https:// URL (got "${value}").`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return this.issue(key, 'isUrl', `conf.${key} must be an http:// or https:// URL (got "${value}").`);
    return value.replace(/\/+$/, '');
  }

  /** An optional number in [min, max] (an integer when `integer`). */
  number(key: string, options: { min?: number; max?: number; integer?: boolean }): number | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value)) return this.issue(key, options.integer ? 'isInt' : 'isNumber', `conf.${key} must be a ${options.integer ? 'whole ' : ''}number.`);
    if (options.integer && !Number.isInteger(value)) return this.issue(key, 'isInt', `conf.${key} must be a whole number.`);
    if (options.min !== undefined && value < options.min) return this.issue(key, 'min', `conf.${key} must be at least ${options.min}.`);
    if (options.max !== undefined && value > options.max) return this.issue(key, 'max', `conf.${key} must be at most ${options.max}.`);
    return value;
  }

  /** An optional value among `values`. */
  oneOf<const T extends string>(key: string, values: readonly T[]): T | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !values.includes(value as T)) return this.issue(key, 'isIn', `conf.${key} must be one of ${values.map((v) => `"${v}"`).join(', ')}.`);
    return value as T;
  }

  /** An optional list of at most `max` non-empty strings. */
  stringList(key: string, max: number): string[] | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item === '')) return this.issue(key, 'isStringArray', `conf.${key} must be a list of non-empty strings.`);
    if (value.length > max) return this.issue(key, 'arrayMaxSize', `conf.${key} holds at most ${max} entries.`);
    return value as string[];
  }

  /** An optional object of string values (HTTP headers). */
  stringRecord(key: string): Record<string, string> | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (!isPlainObject(value) || Object.values(value).some((item) => typeof item !== 'string')) return this.issue(key, 'isStringRecord', `conf.${key} must be an object of string values.`);
    return value as Record<string, string>;
  }

  /** An optional JSON object. */
  object(key: string): Record<string, unknown> | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (!isPlainObject(value)) return this.issue(key, 'isObject', `conf.${key} must be an object.`);
    return value;
  }

  /** Records a problem found by a rule across fields. */
  fail(key: string, constraint: string, message: string): void {
    this.issue(key, constraint, message);
  }

  /** Throws the collected problems (and unknown keys), if any. */
  done(): void {
    for (const key of Object.keys(this.conf)) {
      if (!this.seen.has(key)) this.issue(key, 'unknown', `conf.${key} is not a ${this.service} setting.`);
    }
    if (this.issues.length) throw aiErrors.invalidConf(this.issues);
  }
}
