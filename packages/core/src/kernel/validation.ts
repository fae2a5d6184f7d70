import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, type MetadataStorage, type ValidationError } from 'class-validator';
import { TrellisError, type ValidationIssue } from './errors.js';
import { propertyDocs } from './http/docs-metadata.js';
import { guardInput } from './http/input-guard.js';
import type { ClassType } from './http/route.js';

export interface ValidationFailure {
  status: number;
  code: string;
}

const defaultFailure: ValidationFailure = { status: 422, code: 'validation_failed' };

const memoized = Symbol.for('@trellis/core/memoizedRuleLookup');

/**
 * Makes class-validator remember the rules it finds for a class. It looks them up on every
 * validation of an object (a request body, each DTO nested in it), and for the inherited ones
 * tests the class against every class that has rules (`instanceof`, hundreds of DTO classes
 * here): about 0.15 ms of a request. The answer depends only on the rules registered and on the
 * arguments, so it is kept until a rule is added (a class with rules is declared, or a schema
 * registered). Done once per process, on class-validator's one storage (which an embedder's own
 * DTOs share; they get the same answers, sooner). Each caller gets an array of its own.
 */
export function memoizeRuleLookup(storage: MetadataStorage = getMetadataStorage()): void {
  const target = storage as MetadataStorage & { [memoized]?: true };
  if (target[memoized]) return;
  target[memoized] = true;
  const lookup = storage.getTargetValidationMetadatas.bind(storage);
  // Weakly held: a class that is let go takes its answers with it.
  let known = new WeakMap<Function, Map<string, ReturnType<typeof lookup>>>();
  // Every rule comes through here (a schema's too).
  const add = storage.addValidationMetadata.bind(storage);
  storage.addValidationMetadata = (metadata) => {
    known = new WeakMap();
    add(metadata);
  };
  storage.getTargetValidationMetadatas = (ctor, schema, always, strictGroups, groups) => {
    const key = `${schema}\u0000${always}\u0000${strictGroups}\u0000${groups ? groups.join('\u0001') : '-'}`;
    let byKey = known.get(ctor);
    if (!byKey) known.set(ctor, (byKey = new Map()));
    let rules = byKey.get(key);
    if (!rules) byKey.set(key, (rules = lookup(ctor, schema, always, strictGroups, groups)));
    return rules.slice();
  };
}
memoizeRuleLookup();

/**
 * Turns untrusted input into an instance of a DTO class: unknown properties are refused
 * (whitelist + forbidNonWhitelisted; `ignoreUnknown` strips them instead), nested objects are
 * validated, and every problem is reported with its dotted field path and constraint name.
 *
 * Two rules hold for every DTO, so each one need not spell them out:
 * - a declared field sent as `null` is refused (`isNotNull`) unless it is marked `@Nullable()`
 *   (or `@Doc({ nullable: true })`), where `null` means "clear it": optional means "may be left
 *   out", not "may be null";
 * - a required field left out is reported as such (`isDefined`, "is required"), not by the first
 *   of its other rules that an absent value happens to break.
 */
export async function validateInput<T>(
  dto: ClassType<T>,
  input: unknown,
  where: 'body' | 'query' | 'params',
  failure: ValidationFailure = defaultFailure,
  options: { ignoreUnknown?: boolean } = {},
): Promise<T> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TrellisError('bad_request', failure.status === 400 ? failure.code : 'invalid_body', `The ${where} must be a JSON object.`, {
      status: 400,
    });
  }
  // Depth, NUL, lone surrogates and reserved keys are refused (400) before class-transformer runs.
  guardInput(input, where);
  const instance = plainToInstance(dto, input, { exposeDefaultValues: true }) as T & object;
  const nulls = unexpectedNulls(instance, '');
  const problems = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: !options.ignoreUnknown,
    forbidUnknownValues: true,
    // Values are read to tell a missing field from a wrong one; they never reach the answer.
    validationError: { target: false, value: true },
  });
  if (problems.length > 0 || nulls.length > 0) {
    const refused = new Set(nulls.map((issue) => issue.field));
    const details = [...nulls, ...flatten(problems, '').filter((issue) => !refused.has(issue.field))];
    const first = details[0]!;
    throw new TrellisError('validation', failure.code, `Invalid ${where}: ${first.field ? `${first.field} ` : ''}${first.message}`, {
      status: failure.status,
      details,
    });
  }
  return instance;
}

/** `null` values of declared, non-nullable properties, in this DTO instance and the DTOs nested in it. */
function unexpectedNulls(value: unknown, prefix: string): ValidationIssue[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => unexpectedNulls(item, join(prefix, String(i))));
  if (typeof value !== 'object' || value === null || value.constructor === Object) return [];
  const declared = declaredProperties(value.constructor);
  if (declared.size === 0) return [];
  const docs = propertyDocs(value.constructor);
  const out: ValidationIssue[] = [];
  for (const [name, field] of Object.entries(value)) {
    if (!declared.has(name)) continue;
    const path = join(prefix, name);
    if (field === null) {
      if (!docs.get(name)?.nullable) out.push({ field: path, constraint: 'isNotNull', message: 'must not be null (leave the field out instead)' });
    } else if (typeof field === 'object') out.push(...unexpectedNulls(field, path));
  }
  return out;
}

const declaredCache = new WeakMap<Function, Set<string>>();

/** Properties of a DTO class that carry validation rules (own and inherited). */
function declaredProperties(ctor: Function): Set<string> {
  let names = declaredCache.get(ctor);
  if (!names) {
    names = new Set(getMetadataStorage().getTargetValidationMetadatas(ctor, '', true, false).map((m) => m.propertyName));
    declaredCache.set(ctor, names);
  }
  return names;
}

function join(prefix: string, key: string): string {
  return prefix ? `${prefix}.${key}` : key;
}

function flatten(errors: ValidationError[], prefix: string): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const error of errors) {
    const field = join(prefix, error.property);
    const constraints = Object.entries(error.constraints ?? {});
    if (error.value === undefined && constraints.length > 0 && !('whitelistValidation' in (error.constraints ?? {}))) {
      // Absent: every rule of the field fails, and none of them is the problem.
      out.push({ field, constraint: 'isDefined', message: 'is required' });
      continue;
    }
    for (const [constraint, message] of constraints) {
      out.push({
        field,
        constraint,
        message: constraint === 'whitelistValidation' ? 'is not an accepted field' : stripProperty(message, error.property),
      });
    }
    if (error.children?.length) out.push(...flatten(error.children, field));
  }
  return out;
}

// class-validator messages start with the property name ("email must be an email"); the field is
// reported separately, so keep the message itself.
function stripProperty(message: string, property: string): string {
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}
