import { randomUUID } from 'node:crypto';
import { UserService } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

// Bad input never gets a 5xx: every route of the API, called by a user who holds every
// permission, with malformed ids, wrong types, unknown fields and random JSON, answers 2xx, 3xx or
// 4xx. Generated from the route table, so a new route is covered the day it is added.
describe.each(testDatabases())('robustness on $name', (db) => {
  let t: TestHost;
  let token: string;
  const failures: string[] = [];

  beforeAll(async () => {
    t = await startTestHost(db, 'node');
    const email = `root-${process.pid}-${Date.now()}@example.com`;
    await t.kernel.get(UserService).create(t.kernel.fork(), { email, password: 'correct horse battery', isSiteAdmin: true, isDeveloper: true, isAdministrator: true });
    token = (await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } })).body.token;
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    failures.length = 0;
  });

  const routes = () => t.kernel.routes.filter((route) => !route.path.startsWith('/test/'));

  /** The request body schema of a route in the OpenAPI document, with references resolved. */
  const bodySchema = (method: string, path: string): any => {
    const doc = t.kernel.openapi() as any;
    const operation = doc.paths[path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[method.toLowerCase()];
    const content = operation?.requestBody?.content;
    const schema = content ? (Object.values(content)[0] as any).schema : undefined;
    return resolve(doc, schema);
  };
  const resolve = (doc: any, schema: any): any => (schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema);

  /** A value the schema accepts, at its largest (or smallest) extreme. */
  const edgeValue = (schema: any, mode: 'max' | 'min', depth: number): unknown => {
    const doc = t.kernel.openapi() as any;
    schema = resolve(doc, schema) ?? {};
    if (schema.enum) return mode === 'max' ? schema.enum[schema.enum.length - 1] : schema.enum[0];
    if (schema.const !== undefined) return schema.const;
    if (schema.anyOf) return edgeValue(schema.anyOf[0], mode, depth);
    if (schema.properties || schema.type === 'object') {
      if (depth > 4) return {};
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries<any>(schema.properties ?? {})) out[name] = edgeValue(property, mode, depth + 1);
      if (!schema.properties) out['nested'] = mode === 'max' ? { deep: { deeper: ['x'.repeat(2000)] } } : {};
      return out;
    }
    if (schema.type === 'array') {
      const count = mode === 'max' ? Math.min(schema.maxItems ?? 20, 20) : (schema.minItems ?? 0);
      return Array.from({ length: count }, () => edgeValue(schema.items ?? { type: 'string' }, mode, depth + 1));
    }
    if (schema.type === 'integer') return mode === 'max' ? (schema.maximum ?? Number.MAX_SAFE_INTEGER) : (schema.minimum ?? Number.MIN_SAFE_INTEGER);
    if (schema.type === 'number') return mode === 'max' ? (schema.maximum ?? 1e308) : (schema.minimum ?? -1e308);
    if (schema.type === 'boolean') return mode === 'max';
    if (schema.format === 'uuid') return randomUUID();
    if (schema.format === 'email') return `${'a'.repeat(mode === 'max' ? 60 : 1)}@example.com`;
    if (schema.format === 'uri') return `https://example.com/${'a'.repeat(mode === 'max' ? Math.max(0, (schema.maxLength ?? 2000) - 20) : 0)}`;
    if (schema.format === 'date-time') return mode === 'max' ? '9999-12-31T23:59:59.999Z' : '1970-01-01T00:00:00.000Z';
    if (schema.pattern) return undefined;
    const length = mode === 'max' ? (schema.maxLength ?? 20_000) : Math.max(schema.minLength ?? 0, 1);
    return mode === 'max' ? 'é'.repeat(length) : 'a'.repeat(length);
  };

  const pathFor = (path: string, value: (name: string) => string) => path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(value(name)));

  async function probe(method: string, path: string, options: { body?: unknown; raw?: string; query?: string; contentType?: string }) {
    const url = `${path}${options.query ? `?${options.query}` : ''}`;
    const headers: Record<string, string> = {};
    if (options.contentType) headers['content-type'] = options.contentType;
    const r = await t.request(method, url, { token, headers, ...(options.raw !== undefined ? { raw: options.raw } : options.body !== undefined ? { body: options.body } : {}) });
    if (r.status >= 500) failures.push(`${method} ${url} ${JSON.stringify(options.body ?? options.raw ?? '').slice(0, 200)} -> ${r.status} ${r.text.slice(0, 200)}`);
    return r.status;
  }

  it('answers malformed and unknown path parameters without a 5xx', async () => {
    for (const route of routes()) {
      for (const value of ['x', randomUUID(), '0', '%25', "a'b", 'ü'.repeat(300), '-1', 'null']) {
        await probe(route.method, pathFor(route.path, () => value), { body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers wrong types, unknown fields and junk bodies and queries without a 5xx', async () => {
    const junkValues: unknown[] = [null, true, -1, 1e308, 'x'.repeat(5000), [], [1, 'a'], {}, { a: { b: [] } }, '', '2026-13-45T99:99:99Z'];
    for (const route of routes()) {
      const path = pathFor(route.path, () => randomUUID());
      const fields = Object.keys(bodySchema(route.method, route.path)?.properties ?? {});
      if (route.method !== 'GET') {
        for (const raw of ['', '{', '[]', '"text"', '123', 'null']) await probe(route.method, path, { raw, contentType: 'application/json' });
        await probe(route.method, path, { raw: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' });
        for (const field of fields) {
          for (const value of junkValues) await probe(route.method, path, { body: { [field]: value } });
        }
      }
      for (const query of ['page=-1', 'page=abc&size=100000', 'limit=0', 'type=%00', 'start_time=yesterday', 'a[b]=1&a=2']) {
        await probe(route.method, path, { query, body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
      }
    }
    expect(failures).toEqual([]);
  });

  it('stores or refuses values at the edge of what validation lets through, without a 5xx', async () => {
    const statuses = new Map<number, number>();
    for (const route of routes()) {
      const schema = bodySchema(route.method, route.path);
      if (!schema) continue;
      for (const mode of ['max', 'min'] as const) {
        const status = await probe(route.method, pathFor(route.path, () => randomUUID()), { body: edgeValue(schema, mode, 0) });
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
      // Every field null at once: optional fields must refuse null or treat it as "clear".
      const nulls = Object.fromEntries(Object.keys(schema.properties ?? {}).map((name) => [name, null]));
      await probe(route.method, pathFor(route.path, () => randomUUID()), { body: nulls });
    }
    expect(failures).toEqual([]);
    // Some of these bodies pass validation and reach the handlers and the database.
    expect([...statuses.keys()].some((status) => status < 300)).toBe(true);
  });

  it('survives edge and null values on resources that exist', async () => {
    // Create what the create routes (no path parameter) let us create with minimal bodies, then
    // send edge and null bodies to every route below each created resource's collection.
    const created: Array<{ collection: string; id: string }> = [];
    for (const route of routes().filter((r) => r.method === 'POST' && !r.path.includes(':'))) {
      const schema = bodySchema(route.method, route.path);
      if (!schema) continue;
      const r = await t.request('POST', route.path, { token, body: edgeValue(schema, 'min', 0) });
      const id = r.body?.id ?? r.body?.data?.id;
      if (r.status < 300 && typeof id === 'string') created.push({ collection: route.path, id });
    }
    expect(created.length).toBeGreaterThan(3);
    for (const { collection, id } of created) {
      for (const route of routes().filter((r) => r.path.startsWith(`${collection}/:`))) {
        const path = pathFor(route.path, () => id);
        const schema = bodySchema(route.method, route.path);
        if (!schema) {
          await probe(route.method, path, {});
          continue;
        }
        for (const mode of ['max', 'min'] as const) await probe(route.method, path, { body: edgeValue(schema, mode, 0) });
        await probe(route.method, path, { body: Object.fromEntries(Object.keys(schema.properties ?? {}).map((name) => [name, null])) });
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers random JSON bodies without a 5xx', async () => {
    const writeRoutes = routes().filter((route) => route.method !== 'GET');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writeRoutes), fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }), async (route, body) => {
        await probe(route.method, pathFor(route.path, () => randomUUID()), { body });
      }),
      { numRuns: 300 },
    );
    expect(failures).toEqual([]);
  });
});
