import { Type } from 'class-transformer';
import { ValidateNested } from 'class-validator';
import type { ClassType } from './route.js';

export interface PropertyDoc {
  description?: string;
  example?: unknown;
  /** DTO class of a nested object (or of array items). */
  nested?: () => ClassType;
  /** Free-form JSON Schema merged into the generated one (for `object` fields with any keys). */
  schema?: Record<string, unknown>;
  /**
   * `null` is a meaningful value of this field (it clears it). Without this, an explicit `null`
   * is refused at the edge (422 `validation_failed`, constraint `isNotNull`) like any wrong type,
   * so handlers never see a `null` they did not ask for. Documented as `anyOf: [schema, null]`.
   */
  nullable?: boolean;
}

const docs = new WeakMap<Function, Map<string, PropertyDoc>>();
const classDocs = new WeakMap<Function, { name?: string; description?: string }>();

/** Adds a description, example or schema hint to a DTO property for the OpenAPI document. */
export function Doc(doc: PropertyDoc): PropertyDecorator {
  return (target, property) => {
    const ctor = target.constructor;
    let map = docs.get(ctor);
    if (!map) docs.set(ctor, (map = new Map()));
    map.set(String(property), { ...map.get(String(property)), ...doc });
  };
}

/** The field accepts an explicit `null` (see `PropertyDoc.nullable`). */
export function Nullable(): PropertyDecorator {
  return Doc({ nullable: true });
}

/** Names and describes a DTO class in the OpenAPI document. */
export function Schema(meta: { name?: string; description?: string }): ClassDecorator {
  return (target) => {
    classDocs.set(target, meta);
  };
}

/** A nested DTO (or array of them): validated, transformed and documented in one decorator. */
export function Nested(type: () => ClassType, options: { each?: boolean } = {}): PropertyDecorator {
  const validate = ValidateNested({ each: options.each });
  const transform = Type(type);
  const doc = Doc({ nested: type });
  return (target, property) => {
    validate(target, property as string);
    transform(target, property as string);
    doc(target, property);
  };
}

export function propertyDocs(ctor: Function): Map<string, PropertyDoc> {
  const merged = new Map<string, PropertyDoc>();
  const chain: Function[] = [];
  for (let c: any = ctor; c && c !== Function.prototype && c !== Object; c = Object.getPrototypeOf(c)) chain.unshift(c);
  for (const c of chain) for (const [k, v] of docs.get(c) ?? []) merged.set(k, { ...merged.get(k), ...v });
  return merged;
}

export function classDoc(ctor: Function): { name?: string; description?: string } {
  return classDocs.get(ctor) ?? {};
}
