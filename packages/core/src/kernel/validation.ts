import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import { TrellisError, type ValidationIssue } from './errors.js';
import { guardInput } from './http/input-guard.js';
import type { ClassType } from './http/route.js';

export interface ValidationFailure {
  status: number;
  code: string;
}

const defaultFailure: ValidationFailure = { status: 422, code: 'validation_failed' };

/**
 * Turns untrusted input into an instance of a DTO class: unknown properties are refused
 * (whitelist + forbidNonWhitelisted; `ignoreUnknown` strips them instead), nested objects are
 * validated, and every problem is reported with its dotted field path and constraint name.
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
  const problems = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: !options.ignoreUnknown,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  if (problems.length > 0) {
    const details = flatten(problems, '');
    const first = details[0]!;
    throw new TrellisError('validation', failure.code, `Invalid ${where}: ${first.field ? `${first.field} ` : ''}${first.message}`, {
      status: failure.status,
      details,
    });
  }
  return instance;
}

function flatten(errors: ValidationError[], prefix: string): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
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
