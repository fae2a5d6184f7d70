/**
 * The building blocks of response declarations. A response shape is declared once, as a TypeBox
 * schema: it is the JSON Schema published in `/openapi.json`, and `Static<typeof schema>` is the
 * TypeScript type that the route's handler must return (`defineRoute` checks it) and that the
 * module's mapper builds. Nothing else describes a response.
 *
 * ```ts
 * export const projectSchema = Type.Object({ id: uuid(), name: Type.String(), deletedAt: nullable(dateTime()) });
 * export type ProjectView = Static<typeof projectSchema>;
 * ```
 */
import { Type, type SchemaOptions, type Static, type TSchema, type TUnion, type TNull, type TString, type TUnsafe } from '@sinclair/typebox';

export { Type, type Static, type TSchema };

/** An ISO 8601 timestamp (`Date.prototype.toISOString()`). */
export const dateTime = (options: SchemaOptions = {}): TString => Type.String({ format: 'date-time', ...options });

/** A UUID (every Trellis id). */
export const uuid = (options: SchemaOptions = {}): TString => Type.String({ format: 'uuid', ...options });

/** `schema` or `null`; `options` (a description) go on the union. */
export const nullable = <T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnion<[T, TNull]> => Type.Union([schema, Type.Null()], options);

/** One of fixed strings, published as `{ enum: [...] }` (TypeBox's own union of literals is an `anyOf` of `const`s). */
export const stringEnum = <const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/** Any JSON object whose keys are not fixed (stored settings, a document's content). */
export const jsonObject = (options: SchemaOptions = {}): TUnsafe<Record<string, unknown>> => Type.Unsafe<Record<string, unknown>>({ type: 'object', ...options });

/** A page of a list: `{ items, total, page, size }` (see `pageOf` and `PageQuery`). */
export const pageSchema = <T extends TSchema>(items: T, options: SchemaOptions = {}) =>
  Type.Object({ items: Type.Array(items), total: Type.Integer(), page: Type.Integer(), size: Type.Integer() }, options);
