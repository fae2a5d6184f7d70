import { randomInt, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { coreModules, credentialRule, defineModule, defineRoute, UserService } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

// Each walk sends hundreds of hostile requests (a few seconds per database on a quiet machine,
// several times that on a loaded one).
vi.setConfig({ testTimeout: 120_000 });

/**
 * Sizing (README, "The route fuzzer"): every route gets every hostile kind at least once whatever
 * these say; `TRELLIS_FUZZ_SEED` picks which field of a route carries which kind and seeds the
 * generated walks, `TRELLIS_FUZZ_RUNS` is how many requests each generated walk sends. The seed is
 * printed, and named in every failure, so a run can be replayed.
 */
const fuzzSeed = Number(process.env.TRELLIS_FUZZ_SEED || randomInt(2 ** 31));
const fuzzRuns = Number(process.env.TRELLIS_FUZZ_RUNS || 150);
if (!Number.isSafeInteger(fuzzSeed) || !Number.isSafeInteger(fuzzRuns) || fuzzRuns < 1) throw new Error('TRELLIS_FUZZ_SEED and TRELLIS_FUZZ_RUNS must be integers (TRELLIS_FUZZ_RUNS at least 1)');
const replay = `replay with TRELLIS_FUZZ_SEED=${fuzzSeed} TRELLIS_FUZZ_RUNS=${fuzzRuns}`;
console.info(`[robustness] ${replay}`);

/** The `i`-th of `items`, shifted by the seed: spreads hostile kinds over the fields of a route. */
const pick = <T>(items: readonly T[], i: number): T => items[(fuzzSeed + i) % items.length]!;

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
  let sent = 0;
  afterAll(() => {
    // The walk's size, for choosing TRELLIS_FUZZ_RUNS (the generated walks are counted by fast-check, not here).
    console.info(`[robustness] ${db.name}: ${sent} probes; ${replay}`);
    return t?.close();
  });
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

  /** The operation of a route in the OpenAPI document. */
  const operationOf = (method: string, path: string): any => (t.kernel.openapi() as any).paths[path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')][method.toLowerCase()];
  /** A path whose parameters pass validation: each one's documented example, else a new UUID. */
  const wellFormedPath = (method: string, path: string): string => {
    const parameters: any[] = operationOf(method, path).parameters ?? [];
    return pathFor(path, (name) => parameters.find((p) => p.in === 'path' && p.name === name)?.schema?.examples?.[0] ?? randomUUID());
  };
  /** Properties of a body schema a client may leave out. */
  const optionalFields = (schema: any): string[] => Object.keys(schema.properties ?? {}).filter((name) => !(schema.required ?? []).includes(name));
  /** Whether a property's schema admits `null` (documented nullable). */
  const acceptsNull = (property: any): boolean =>
    property?.type === 'null' || (Array.isArray(property?.type) && property.type.includes('null')) || (property?.anyOf ?? []).some((option: any) => option.type === 'null');

  const pathFor = (path: string, value: (name: string) => string) => path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeSegment(value(name)));

  async function probe(method: string, path: string, options: { body?: unknown; raw?: string; query?: string; contentType?: string }) {
    const url = `${path}${options.query ? `?${options.query}` : ''}`;
    const headers: Record<string, string> = {};
    if (options.contentType) headers['content-type'] = options.contentType;
    sent++;
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
    expect(failures, replay).toEqual([]);
  });

  it('answers wrong types, unknown fields and junk bodies and queries without a 5xx', async () => {
    const junkValues: unknown[] = [null, true, -1, 1e308, 'x'.repeat(5000), [], [1, 'a'], {}, { a: { b: [] } }, '', '2026-13-45T99:99:99Z'];
    for (const route of routes()) {
      const path = pathFor(route.path, () => randomUUID());
      const fields = Object.keys(bodySchema(route.method, route.path)?.properties ?? {});
      if (route.method !== 'GET') {
        for (const raw of ['', '{', '[]', '"text"', '123', 'null']) await probe(route.method, path, { raw, contentType: 'application/json' });
        await probe(route.method, path, { raw: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' });
        // Each junk value once per route, in a field the seed picks (every field when there are as many values).
        if (fields.length) for (const [i, value] of junkValues.entries()) await probe(route.method, path, { body: { [pick(fields, i)]: value } });
      }
      for (const query of ['page=-1', 'page=abc&size=100000', 'limit=0', 'type=%00', 'start_time=yesterday', 'a[b]=1&a=2']) {
        await probe(route.method, path, { query, body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
      }
    }
    expect(failures, replay).toEqual([]);
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
    }
    expect(failures, replay).toEqual([]);
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
        // An explicit null in each optional field, alone in an otherwise valid body: refused, or
        // (a field documented nullable) stored as "cleared".
        const minimal = edgeValue(schema, 'min', 0) as Record<string, unknown>;
        for (const field of optionalFields(schema)) await probe(route.method, path, { body: { ...minimal, [field]: null } });
      }
    }
    expect(failures, replay).toEqual([]);
  });

  it('refuses an explicit null in every optional field that is not documented nullable, with 400 or 422', async () => {
    const wrong: string[] = [];
    let nullable = 0;
    for (const route of jwtRoutes()) {
      const schema = bodySchema(route.method, route.path);
      // A form body has no null to send.
      if (!schema || !operationOf(route.method, route.path).requestBody.content['application/json']) continue;
      const minimal = edgeValue(schema, 'min', 0) as Record<string, unknown>;
      // Path values the route's parameters accept (their documented example, else a UUID), so the body is what is checked.
      const path = wellFormedPath(route.method, route.path);
      for (const field of optionalFields(schema)) {
        const status = await probe(route.method, path, { body: { ...minimal, [field]: null } });
        if (acceptsNull(schema.properties[field])) nullable++;
        else if (status !== 400 && status !== 422) wrong.push(`${route.method} ${route.path} ${field}: null -> ${status}`);
      }
    }
    expect(failures, replay).toEqual([]);
    expect(wrong).toEqual([]);
    // The fields whose null means "clear" are walked too (their answers checked for 5xx above).
    expect(nullable).toBeGreaterThan(5);
  });

  it('answers random JSON bodies without a 5xx', async () => {
    const writeRoutes = routes().filter((route) => route.method !== 'GET');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writeRoutes), fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }), async (route, body) => {
        await probe(route.method, pathFor(route.path, () => randomUUID()), { body });
      }),
      { numRuns: fuzzRuns, seed: fuzzSeed, endOnFailure: true },
    );
    expect(failures, replay).toEqual([]);
  });

  // Hostile input classes the edge refuses with 400 on every route, before a DTO or the database
  // sees them: deep nesting, reserved keys, NUL and unpaired surrogates (in bodies, keys, queries
  // and path parameters).
  const hostileValues: Array<[string, unknown]> = [
    ['deep nesting', JSON.parse(`${'['.repeat(1500)}1${']'.repeat(1500)}`)],
    ['a constructor key', { constructor: 'x' }],
    ['a __proto__ key', JSON.parse('{"__proto__":{"polluted":true}}')],
    ['a NUL character', 'a\u0000b'],
    ['a lone high surrogate', 'x\uD800y'],
    ['a lone low surrogate', '\uDC00'],
  ];
  /** Routes our JWT can call (a route for other credential kinds answers 403 before reading input). */
  const jwtRoutes = () => routes().filter((route) => credentialRule(route.auth)?.kinds.includes('jwt') ?? true);

  it('refuses deep nesting, reserved keys, NUL and lone surrogates in any body field with 400', async () => {
    const wrong: string[] = [];
    for (const route of jwtRoutes()) {
      const schema = bodySchema(route.method, route.path);
      if (!schema) continue;
      const doc = t.kernel.openapi() as any;
      const operation = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')][route.method.toLowerCase()];
      const json = 'application/json' in operation.requestBody.content;
      const fields = Object.keys(schema.properties ?? {});
      // Each hostile kind once per route, in a field the seed picks.
      for (const [i, [label, value]] of hostileValues.entries()) {
        const field = pick(fields.length ? fields : ['value'], i);
        {
          const path = pathFor(route.path, () => randomUUID());
          const status = json
            ? await probe(route.method, path, { body: { ...(edgeValue(schema, 'min', 0) as object), [field]: value } })
            : // A form body can carry a NUL (%00); percent-decoding never yields a lone surrogate.
              typeof value === 'string' && value.includes('\u0000')
              ? await probe(route.method, path, { raw: `${field}=a%00b`, contentType: 'application/x-www-form-urlencoded' })
              : 400;
          if (status !== 400) wrong.push(`${route.method} ${route.path} ${field}: ${label} -> ${status}`);
        }
      }
      // A key may be hostile too.
      const status = await probe(route.method, pathFor(route.path, () => randomUUID()), { raw: '{"a\\u0000":1}', contentType: 'application/json' });
      if (json && status !== 400) wrong.push(`${route.method} ${route.path} NUL in a key -> ${status}`);
    }
    expect(failures, replay).toEqual([]);
    expect(wrong).toEqual([]);
  });

  it('refuses NUL and lone surrogates in query strings and path parameters with 400', async () => {
    const wrong: string[] = [];
    for (const route of jwtRoutes()) {
      // Percent-decoding turns malformed UTF-8 into U+FFFD (query) or no route (path), so only NUL
      // reaches these places; both spellings are refused.
      for (const bad of ['%00', 'a%00b']) {
        const withQuery = await probe(route.method, pathFor(route.path, () => randomUUID()), { query: `q=${bad}&teamId=${bad}` });
        if (withQuery !== 400) wrong.push(`${route.method} ${route.path}?q=${bad} -> ${withQuery}`);
        if (!route.path.includes(':')) continue;
        const inPath = await probe(route.method, route.path.replace(/:([A-Za-z0-9_]+)/g, bad), {});
        if (inPath !== 400) wrong.push(`${route.method} ${route.path} path ${bad} -> ${inPath}`);
      }
    }
    const app = await t.request('GET', '/oauth/apps/%00/public');
    expect(app.status).toBe(400);
    expect(app.body.error).toBe('invalid_request');
    expect(failures, replay).toEqual([]);
    expect(wrong).toEqual([]);
  });

  it('names the problem of a hostile body in a documented error', async () => {
    const deep = await t.request('POST', '/project', { token, raw: `{"name":${'['.repeat(2000)}${']'.repeat(2000)}}`, headers: { 'content-type': 'application/json' } });
    expect(deep.status).toBe(400);
    expect(deep.body.error).toBe('input_too_deep');
    const nul = await t.request('POST', '/project', { token, body: { name: 'a\u0000b' } });
    expect(nul.status).toBe(400);
    expect(nul.body).toMatchObject({ error: 'invalid_characters', details: [{ field: 'name', constraint: 'invalid_characters' }] });
    const surrogate = await t.request('POST', '/auth/register', { body: { email: '\uD800@example.com', password: 'correct horse battery' } });
    expect(surrogate.status).toBe(400);
    expect(surrogate.body.error).toBe('invalid_characters');
    const reserved = await t.request('POST', '/project', { token, body: { name: 'p', tools: [], accessLevel: 'private', constructor: { name: 'x' } } });
    expect(reserved.status).toBe(400);
    expect(reserved.body.error).toBe('reserved_key');
  });

  it('answers billing calls racing the deletion of their team without a 5xx', async () => {
    const statuses: number[] = [];
    for (let round = 0; round < 6; round++) {
      const team = await t.request('POST', '/teams', { token, body: { name: `race ${round}` } });
      expect(team.status).toBe(201);
      const teamId = team.body.id as string;
      const calls = [
        () => t.request('DELETE', `/teams/${teamId}`, { token }),
        () => t.request('POST', '/billing/credits/purchase', { token, body: { teamId, packCode: 'credits-1000' } }),
        () => t.request('POST', '/billing/subscription/change-plan', { token, body: { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' } }),
        () => t.request('POST', '/billing/credits/reservations', { token, body: { teamId, amount: 1 } }),
        () => t.request('GET', `/billing/subscription?teamId=${teamId}`, { token }),
        () => t.request('GET', `/billing/credits/ledger?teamId=${teamId}`, { token }),
        () => t.request('POST', '/billing/subscription/cancel-renewal', { token, body: { teamId } }),
        () => t.request('GET', `/billing/orders?teamId=${teamId}`, { token }),
      ];
      // Rotate which call starts first so the deletion lands at different points of the others.
      const order = calls.map((_, i) => calls[(i + round) % calls.length]!);
      const answers = await Promise.all(order.map((call) => call()));
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status >= 500) failures.push(`race round ${round}: ${answer.status} ${answer.text.slice(0, 300)}`);
      }
    }
    expect(failures, replay).toEqual([]);
    expect(statuses.some((status) => status < 300)).toBe(true);
  });

  it('walks every operation of /openapi.json with generated hostile input and never answers 5xx', async () => {
    // Generic: derived from the published document, so a route added later is walked too.
    const doc = (await t.request('GET', '/openapi.json')).body;
    const operations = openApiOperations(doc).filter((op) => !op.path.startsWith('/test/'));
    expect(operations.length).toBeGreaterThan(50);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...operations).chain((op) => requestFor(doc, op)), async (generated) => {
        const r = await t.request(generated.method, generated.url, { token: generated.anonymous ? undefined : token, ...generated.payload });
        if (r.status >= 500) failures.push(`${generated.method} ${generated.url} ${JSON.stringify(generated.payload).slice(0, 300)} -> ${r.status} ${r.text.slice(0, 200)}`);
      }),
      { numRuns: fuzzRuns, seed: fuzzSeed, endOnFailure: true },
    );
    expect(failures, replay).toEqual([]);
  });
});

// Database errors reach the logs without the values of the failing statement.
describe.each(testDatabases())('database errors in logs on $name', (db) => {
  let t: TestHost;
  const lines: string[] = [];
  const secret = `secret-${randomUUID()}`;
  const failing = defineModule({
    name: 'test-sql-failure',
    routes: [
      defineRoute({
        method: 'POST',
        path: '/test/sql-failure',
        auth: 'none',
        hidden: true,
        async handler(ctx) {
          // A statement that fails in the database (no such table), with a bound value.
          await ctx.em.getConnection().execute('insert into no_such_table (value) values (?)', [secret]);
        },
      }),
    ],
  });

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    t = await startTestHost(db, 'node', { modules: [...coreModules, failing], logger: pino({ level: 'debug' }, sink), config: { database: { debug: true } } as never });
  });
  afterAll(() => t?.close());

  it('logs the failure and its code, never the bound values of the statement', async () => {
    const r = await t.request('POST', '/test/sql-failure');
    expect(r.status).toBe(500);
    expect(r.text).not.toContain(secret);
    const log = lines.join('');
    expect(log).toContain('request failed');
    expect(log).toMatch(/no_such_table|no such table|does not exist/);
    expect(log).not.toContain(secret);
  });
});

interface Operation {
  method: string;
  path: string;
  operation: any;
}

/** Every operation of an OpenAPI document. */
function openApiOperations(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) if (item[method]) out.push({ method: method.toUpperCase(), path, operation: item[method] });
  }
  return out;
}

const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('', ' ', '\u0000', 'a\u0000', '\uD800', '\uDFFF\uD800', "'; drop table users; --", '../../etc/passwd', '%00', 'ü'.repeat(300), '9'.repeat(400), '-1', 'null', 'constructor', '__proto__', '2026-13-45T99:99:99Z', 'x'.repeat(70_000)),
  },
);

/** A value shaped like `schema` most of the time, and hostile or of the wrong type the rest. */
function valueFor(doc: any, schema: any, depth: number): fc.Arbitrary<unknown> {
  const resolved = schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : (schema ?? {});
  const junk = fc.oneof(hostileString, fc.jsonValue({ maxDepth: 2 }), fc.constant({ constructor: 1 }), fc.constant(JSON.parse(`${'['.repeat(200)}${']'.repeat(200)}`)));
  let shaped: fc.Arbitrary<unknown>;
  if (resolved.enum) shaped = fc.constantFrom(...resolved.enum);
  else if (resolved.const !== undefined) shaped = fc.constant(resolved.const);
  else if (resolved.anyOf || resolved.oneOf) shaped = fc.oneof(...(resolved.anyOf ?? resolved.oneOf).map((s: any) => valueFor(doc, s, depth + 1)));
  else if (resolved.type === 'object' || resolved.properties) {
    if (depth > 3) return fc.constant({});
    const entries = Object.entries<any>(resolved.properties ?? {}).map(([name, property]) => [name, valueFor(doc, property, depth + 1)] as const);
    shaped = fc.record(Object.fromEntries(entries), { requiredKeys: (resolved.required ?? []).filter((name: string) => name in (resolved.properties ?? {})) });
  } else if (resolved.type === 'array') shaped = fc.array(valueFor(doc, resolved.items, depth + 1), { maxLength: 4 });
  else if (resolved.type === 'integer') shaped = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31, Number.MAX_SAFE_INTEGER));
  else if (resolved.type === 'number') shaped = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(1e308));
  else if (resolved.type === 'boolean') shaped = fc.boolean();
  else if (resolved.format === 'uuid') shaped = fc.uuid();
  else if (resolved.format === 'email') shaped = fc.oneof(fc.emailAddress(), hostileString.map((s) => `${s}@example.com`));
  else if (resolved.format === 'uri') shaped = fc.oneof(fc.webUrl(), hostileString.map((s) => `https://example.com/${s}`));
  else if (resolved.type === 'string') shaped = fc.oneof(hostileString, fc.string({ minLength: resolved.minLength ?? 0, maxLength: Math.min(resolved.maxLength ?? 60, 60) }));
  else shaped = fc.jsonValue({ maxDepth: 2 });
  return fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 1, arbitrary: junk });
}

/** One generated request for an operation: path parameters, query and body from its schemas. */
function requestFor(doc: any, op: Operation): fc.Arbitrary<{ method: string; url: string; anonymous: boolean; payload: { body?: unknown; raw?: string; headers?: Record<string, string> } }> {
  const parameters: any[] = op.operation.parameters ?? [];
  const pathParams = parameters.filter((p) => p.in === 'path');
  const queryParams = parameters.filter((p) => p.in === 'query');
  const content = op.operation.requestBody?.content ?? {};
  const contentType = Object.keys(content)[0];
  // Query and path values stay within what an HTTP request line carries (bodies take the long ones).
  const text = (schema: any) => valueFor(doc, schema, 0).map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? '')).slice(0, 2000));
  const path = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, fc.oneof(fc.uuid(), text(p.schema))])));
  const query = fc.record(Object.fromEntries(queryParams.map((p) => [p.name, text(p.schema)])), { requiredKeys: [] });
  const body = contentType ? fc.option(valueFor(doc, content[contentType].schema, 0), { freq: 8, nil: undefined }) : fc.constant(undefined);
  return fc.record({ path, query, body, anonymous: fc.boolean() }).map(({ path: pathValues, query: q, body: b, anonymous }) => {
    const values = pathValues as Record<string, unknown>;
    const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeSegment(String(values[name] ?? '')).replace(/^$/, '%20'));
    const search = new URLSearchParams(Object.entries(q as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)])).toString();
    let payload: { body?: unknown; raw?: string; headers?: Record<string, string> } = {};
    if (b !== undefined && contentType === 'application/x-www-form-urlencoded' && typeof b === 'object' && b !== null && !Array.isArray(b)) {
      const pairs = Object.entries(b).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : (JSON.stringify(v) ?? '')]);
      payload = { raw: new URLSearchParams(pairs).toString(), headers: { 'content-type': contentType } };
    } else if (b !== undefined) payload = { body: b };
    return { method: op.method, url: `${url}${search ? `?${search}` : ''}`, anonymous, payload };
  });
}

/**
 * A path segment percent-encoded as a hostile client would send it: what `encodeURIComponent`
 * does, and a lone surrogate (which it refuses with a URIError) as its WTF-8 bytes (`%ED%A0%80`),
 * which are not UTF-8: the server must refuse them as it refuses any other malformed segment.
 */
function encodeSegment(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      out += encodeURIComponent(value.slice(i, i + 2));
      i++;
    } else if ((unit & 0xf800) === 0xd800) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(value[i]!);
  }
  return out;
}
