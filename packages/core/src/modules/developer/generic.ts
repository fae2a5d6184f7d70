import { TrellisError } from '../../kernel/errors.js';
import { JsonPointerSyntaxError, resolvePointer } from './json-pointer.js';
import type { JsonSchema } from './schemas.js';

/**
 * The document `GET /{area}/schema?type=` answers: the type's JSON Schema (draft 2020-12) with
 * `$schema` and a stable `$id` (`urn:trellis:{area}:{type}`).
 */
export function schemaDocument(area: string, type: string, schema: JsonSchema): JsonSchema {
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: `urn:trellis:${area}:${type}`, ...schema };
}

/**
 * The part of a document an RFC 6901 pointer names. A malformed pointer is a 400
 * (`invalid_pointer`); a well-formed one that names nothing is a 404 (`pointer_not_found`).
 */
export function pointInto(document: unknown, pointer: string): unknown {
  let result: ReturnType<typeof resolvePointer>;
  try {
    result = resolvePointer(document, pointer);
  } catch (error) {
    if (error instanceof JsonPointerSyntaxError) {
      throw new TrellisError('bad_request', 'invalid_pointer', `The pointer is not an RFC 6901 JSON Pointer: ${error.message}`);
    }
    throw error;
  }
  if (!result.found) throw new TrellisError('not_found', 'pointer_not_found', `The pointer ${JSON.stringify(pointer)} names nothing in the schema.`);
  return result.value;
}
