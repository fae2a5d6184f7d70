import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { lazyAjv } from '../../../kernel/ajv.js';
import type { AttrIssue } from './kind.js';

/** Schema keywords that say how a field's failure is reported (kept out of ajv's checks). */
const CONSTRAINT = 'x-constraint';
const MESSAGE = 'x-message';

/** Schema options: a field that fails is reported with this constraint and message. */
export const attrIssue = (constraint: string, message: string) => ({ [CONSTRAINT]: constraint, [MESSAGE]: message });

/**
 * An optional text attr that may also be null (editors write null for an unset attr): the block
 * then uses its fallback (its text, most often).
 */
export const optionalText = (options: Record<string, unknown> = {}) =>
  Type.Optional(Type.Union([Type.String(), Type.Null()], { ...attrIssue('isString', 'must be a string'), ...options }));

const ajv = lazyAjv({ allErrors: true, strict: true }, (instance) => instance.addVocabulary([CONSTRAINT, MESSAGE]));

const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');

/**
 * A compiled attrs schema: `check(attrs)` answers one issue per failing field (its declared
 * constraint and message, else one made from the first failing keyword), fields in the order the
 * schema declares them.
 */
export class AttrsValidator {
  private readonly validate: ValidateFunction;
  private readonly order: string[];

  constructor(private readonly schema: TObject) {
    this.validate = ajv().compile(schema);
    this.order = Object.keys(schema.properties);
  }

  check(attrs: unknown): AttrIssue[] {
    if (this.validate(attrs)) return [];
    const byField = new Map<string, AttrIssue>();
    for (const error of this.validate.errors ?? []) {
      const field = fieldOf(error);
      if (!byField.has(field)) byField.set(field, this.issueOf(field, error));
    }
    return this.sorted([...byField.values()]);
  }

  /** Issues in the schema's field order; fields it does not declare come last, as found. */
  sorted(issues: AttrIssue[]): AttrIssue[] {
    const rank = (field: string) => {
      const at = this.order.indexOf(field);
      return at < 0 ? this.order.length : at;
    };
    return issues.map((issue, i) => ({ issue, i })).sort((a, b) => rank(a.issue.field) - rank(b.issue.field) || a.i - b.i).map(({ issue }) => issue);
  }

  private issueOf(field: string, error: ErrorObject): AttrIssue {
    const declared = (field ? this.schema.properties[field] : undefined) as (TSchema & Record<string, unknown>) | undefined;
    if (declared && typeof declared[CONSTRAINT] === 'string' && typeof declared[MESSAGE] === 'string') {
      return { field, constraint: declared[CONSTRAINT], message: declared[MESSAGE] };
    }
    if (error.keyword === 'type') {
      const type = String((error.params as { type: unknown }).type).split(',')[0]!;
      return { field, constraint: `is${type[0]!.toUpperCase()}${type.slice(1)}`, message: `must be ${article(type)} ${type}` };
    }
    return { field, constraint: error.keyword, message: error.message ?? 'is not valid' };
  }
}

/** The attr an error is about: the missing property, or the first step of its path ('' for the attrs themselves). */
function fieldOf(error: ErrorObject): string {
  if (error.keyword === 'required') return String((error.params as { missingProperty: unknown }).missingProperty);
  const step = error.instancePath.split('/')[1] ?? '';
  return step.replace(/~1/g, '/').replace(/~0/g, '~');
}
