import type { ValidateFunction } from 'ajv';
import { lazyAjv } from '../../../../kernel/ajv.js';
import { TrellisError } from '../../../../kernel/errors.js';
import type { AiMessage } from '../../../../ports/ai-provider.js';
import type { AttrIssue } from '../kind.js';

/*
 * Structured output of an LLM block (`attrs.outputSchema`): the model is asked for one JSON value
 * matching the schema (in the prompt, and through the vendor's JSON mode where the adapter has
 * one); its answer is parsed and validated, and a failing answer is sent back with the errors for
 * at most `maxRepairs` more tries.
 */

/** Repair tries after the first answer when the block does not say (`attrs.maxRepairs`). */
export const DEFAULT_MAX_REPAIRS = 2;

// User schemas: unknown keywords and formats are tolerated (vendors' schemas carry their own).
const ajv = lazyAjv({ allErrors: true, strict: false, validateFormats: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** The validator of a block's schema (compiled once per schema object). */
export function outputValidator(schema: Record<string, unknown>): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv().compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/** The issue of an `outputSchema` object that is not a JSON Schema ajv can compile (none when it compiles, or is not an object). */
export function outputSchemaIssues(schema: unknown): AttrIssue[] {
  // Not an object: the attrs schema reports it.
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [];
  try {
    ajv().compile(schema as Record<string, unknown>);
    return [];
  } catch (error) {
    return [{ field: 'outputSchema', constraint: 'isJsonSchema', message: `is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300) }];
  }
}

/** The instruction added to the system prompt: answer one JSON value matching `schema`. */
export const schemaInstruction = (schema: Record<string, unknown>): string =>
  `Answer with one JSON value and nothing else (no prose, no code fences). It must be valid against this JSON Schema:\n${JSON.stringify(schema)}`;

/** The message that sends a failing answer's errors back to the model. */
export const repairRequest = (errors: string): AiMessage => ({
  role: 'user',
  content: `Your answer is not valid: ${errors}. Answer again with only the corrected JSON value.`,
});

/** The model's answer read as JSON (a code fence around it is tolerated) and checked; `errors` says what is wrong. */
export function readStructured(text: string, validate: ValidateFunction): { ok: true; value: unknown } | { ok: false; errors: string } {
  const trimmed = text.trim();
  const fenced = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  let value: unknown;
  try {
    value = JSON.parse(fenced ? fenced[1]! : trimmed);
  } catch (error) {
    return { ok: false, errors: `it is not JSON (${error instanceof Error ? error.message : 'parse error'})` };
  }
  if (validate(value)) return { ok: true, value };
  return { ok: false, errors: ajv().errorsText(validate.errors, { dataVar: 'answer', separator: '; ' }) };
}

/** The block's failure once every try gave an invalid answer. */
export const structuredOutputInvalid = (tries: number, errors: string) =>
  new TrellisError('bad_request', 'structured_output_invalid', `The model's answer did not match the block's outputSchema after ${tries} ${tries === 1 ? 'try' : 'tries'}: ${errors}`.slice(0, 1000), { expose: true });
