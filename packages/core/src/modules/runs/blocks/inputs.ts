/**
 * A run's inputs, declared once: an input definition (an input block, or a deployment's input)
 * becomes a TypeBox schema, which both checks the values a caller sends (`validateInputs`) and is
 * the JSON Schema offered to clients that need one (the MCP tools of deployed blocks).
 */
import { Type, type SchemaOptions, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { ValidationIssue } from '../../../kernel/errors.js';
import type { DeploymentInput } from '../../blocks/index.js';
import { inputTypes, type InputAttrs, type InputType } from './kinds/input.js';
import type { WorkflowBlock } from './workflow.js';

export interface InputDefinition {
  name: string;
  /** `any`: not checked (a deployment's input of a type the runtime does not know). */
  type: InputType | 'any';
  required: boolean;
  default?: unknown;
  description?: string;
}

/** The input definitions of a workflow, in order (the spec's Input Block schema). */
export function inputDefinitions(blocks: readonly WorkflowBlock[]): InputDefinition[] {
  return blocks
    .filter((b) => b.kind === 'input')
    .map((b) => ({
      name: b.name,
      type: (b.attrs as InputAttrs).type ?? 'string',
      required: b.attrs.required === true,
      ...(b.attrs.default !== undefined ? { default: b.attrs.default } : {}),
      ...(typeof b.attrs.description === 'string' ? { description: b.attrs.description } : {}),
    }));
}

/** A deployment's inputs in the runtime's terms (a type the runtime does not know is not checked); none: `undefined`. */
export function deploymentInputDefinitions(inputs: readonly DeploymentInput[] | null | undefined): InputDefinition[] | undefined {
  if (!inputs?.length) return undefined;
  return inputs.map((input) => ({
    name: input.name,
    type: (inputTypes as readonly string[]).includes(input.type) ? (input.type as InputType) : 'any',
    required: input.required,
    ...(input.default !== undefined ? { default: input.default } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
  }));
}

const valueSchemas: Record<InputType | 'any', (options: SchemaOptions) => TSchema> = {
  any: (options) => Type.Unknown(options),
  string: (options) => Type.String(options),
  number: (options) => Type.Number(options),
  integer: (options) => Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, ...options }),
  boolean: (options) => Type.Boolean(options),
  array: (options) => Type.Array(Type.Unknown(), options),
  object: (options) => Type.Object({}, options),
};
const checks = Object.fromEntries(Object.entries(valueSchemas).map(([type, make]) => [type, make({})])) as Record<InputType | 'any', TSchema>;

/** The schema of one input's value, with its description and default. */
export function inputValueSchema(definition: InputDefinition): TSchema {
  return valueSchemas[definition.type]({
    ...(definition.description ? { description: definition.description } : {}),
    ...(definition.default !== undefined ? { default: definition.default } : {}),
  });
}

/** The JSON Schema of a run's inputs: an object with one property per input; required ones without a default are required. */
export function inputsSchema(definitions: readonly InputDefinition[]): TObject {
  const properties: Record<string, TSchema> = {};
  for (const definition of definitions) {
    const schema = inputValueSchema(definition);
    properties[definition.name] = definition.required && definition.default === undefined ? schema : Type.Optional(schema);
  }
  return Type.Object(properties);
}

/**
 * Checks `inputs` against the definitions and returns them with defaults applied. `null` is an
 * absent value: the default, else `null` for an optional input, else the issue `required`. A
 * value is checked against its input's schema (`inputValueSchema`).
 */
export function validateInputs(definitions: readonly InputDefinition[], inputs: Record<string, unknown>): { values: Record<string, unknown>; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const values: Record<string, unknown> = {};
  const known = new Set(definitions.map((d) => d.name));
  for (const key of Object.keys(inputs)) {
    if (!known.has(key)) issues.push({ field: `inputs.${key}`, constraint: 'unknown', message: `no input block is named "${key}"` });
  }
  for (const definition of definitions) {
    const value = inputs[definition.name];
    if (value === undefined || value === null) {
      if (definition.default !== undefined) values[definition.name] = definition.default;
      else if (definition.required) issues.push({ field: `inputs.${definition.name}`, constraint: 'required', message: `is required${definition.description ? ` (${definition.description})` : ''}` });
      else values[definition.name] = null;
      continue;
    }
    if (!Value.Check(checks[definition.type], value)) {
      const type = definition.type;
      issues.push({ field: `inputs.${definition.name}`, constraint: `is${type[0]!.toUpperCase()}${type.slice(1)}`, message: `must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}` });
      continue;
    }
    values[definition.name] = value;
  }
  return { values, issues };
}
