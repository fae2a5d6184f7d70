import { describe, expect, expectTypeOf, it } from 'vitest';
import { buildOpenApi } from './openapi.js';
import { Reply } from './reply.js';
import { dateTime, nullable, pageSchema, stringEnum, Type, uuid, type Static } from './response-schema.js';
import { defineRoute, type RouteDefinition } from './route.js';

const info = { title: 'test', version: '0' };

function publishedSchema(route: RouteDefinition): unknown {
  const doc = buildOpenApi([route], info) as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>> };
  return JSON.parse(JSON.stringify(doc.paths['/thing']!.get!.responses['200']!.content['application/json']!.schema));
}

describe('response declarations', () => {
  it('one declaration gives the published schema and the type the handler must return', () => {
    const thingSchema = Type.Object({ id: uuid(), kind: stringEnum(['a', 'b']), seenAt: nullable(dateTime()), note: Type.Optional(Type.String()) });
    type Thing = Static<typeof thingSchema>;
    expectTypeOf<Thing>().toEqualTypeOf<{ id: string; kind: 'a' | 'b'; seenAt: string | null; note?: string }>();

    const route = defineRoute({ method: 'GET', path: '/thing', auth: 'none', response: { schema: thingSchema }, handler: () => ({ id: 'x', kind: 'a' as const, seenAt: null }) });
    expect(publishedSchema(route)).toEqual({
      type: 'object',
      required: ['id', 'kind', 'seenAt'],
      properties: {
        id: { type: 'string', format: 'uuid' },
        kind: { type: 'string', enum: ['a', 'b'] },
        seenAt: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
        note: { type: 'string' },
      },
    });
  });

  it('changing the declaration changes both the type and the published schema', () => {
    const before = Type.Object({ count: Type.Integer() });
    const after = Type.Object({ count: Type.Integer(), label: Type.String({ description: 'New field.' }) });
    expectTypeOf<Static<typeof after>>().toEqualTypeOf<{ count: number; label: string }>();
    expectTypeOf<Static<typeof before>>().not.toEqualTypeOf<Static<typeof after>>();

    const oldRoute = defineRoute({ method: 'GET', path: '/thing', auth: 'none', response: { schema: before }, handler: () => ({ count: 1 }) });
    // The handler that satisfied the old declaration no longer compiles against the new one:
    // @ts-expect-error `label` is missing
    const newRoute = defineRoute({ method: 'GET', path: '/thing', auth: 'none', response: { schema: after }, handler: () => ({ count: 1 }) });
    expect(publishedSchema(oldRoute)).toEqual({ type: 'object', required: ['count'], properties: { count: { type: 'integer' } } });
    expect(publishedSchema(newRoute)).toEqual({
      type: 'object',
      required: ['count', 'label'],
      properties: { count: { type: 'integer' }, label: { type: 'string', description: 'New field.' } },
    });
  });

  it('the compiler refuses a handler value of the wrong shape, async or not, and lets a Reply through', () => {
    const schema = pageSchema(Type.Object({ id: Type.String() }));
    defineRoute({
      method: 'GET',
      path: '/thing',
      auth: 'none',
      response: { schema },
      // @ts-expect-error `total` must be an integer, not a string
      handler: async () => ({ items: [{ id: 'a' }], total: '1', page: 1, size: 20 }),
    });
    defineRoute({ method: 'GET', path: '/thing', auth: 'none', response: { schema }, handler: async () => Reply.json({ anything: true }, 202) });
    defineRoute({ method: 'GET', path: '/thing', auth: 'none', response: { schema }, handler: async () => ({ items: [], total: 0, page: 1, size: 20 }) });
  });
});
