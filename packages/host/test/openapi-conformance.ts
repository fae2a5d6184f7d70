import { Ajv2020 } from 'ajv/dist/2020.js';
import type { TestHost, TestResponse } from '@trellis/test-support';
import { expect } from 'vitest';

type Json = Record<string, any>;

/**
 * Checks responses against the host's own `/openapi.json`: the status must be documented for the
 * route, and a JSON body must satisfy the documented schema. Wraps `t.request` for the paths under
 * `prefixes`, so a suite proves that what the handlers answer is what the route table documents.
 */
export async function conformingRequests(t: TestHost, prefixes: readonly string[]): Promise<TestHost['request']> {
  const spec: Json = (await t.request('GET', '/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();
  const templates = Object.keys(spec.paths).map((template) => ({
    template,
    regex: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    statics: template.split('/').filter((s) => s && !s.startsWith('{')).length,
  }));
  const inline = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(inline);
    if (!schema || typeof schema !== 'object') return schema;
    const ref = (schema as Json).$ref;
    if (typeof ref === 'string') return inline(spec.components.schemas[ref.replace('#/components/schemas/', '')]);
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inline(v)]));
  };
  return async (method, path, options) => {
    const response: TestResponse = await t.request(method, path, options);
    const bare = path.split('?')[0]!;
    if (!prefixes.some((p) => bare.startsWith(p))) return response;
    const lower = method.toLowerCase();
    const match = templates
      .filter((c) => c.regex.test(bare) && spec.paths[c.template][lower])
      .sort((a, b) => b.statics - a.statics)[0];
    if (!match) return response; // 404/405 for a path the table does not know
    const documented = spec.paths[match.template][lower].responses;
    expect(Object.keys(documented), `${method} ${match.template} answered an undocumented ${response.status}: ${response.text}`).toContain(String(response.status));
    const schema = documented[String(response.status)]?.content?.['application/json']?.schema;
    if (schema && (response.headers.get('content-type') ?? '').includes('json')) {
      const key = `${lower} ${match.template} ${response.status}`;
      let validate = validators.get(key);
      if (!validate) validators.set(key, (validate = ajv.compile(inline(schema) as Json)));
      expect(validate(response.body) ? [] : validate.errors, `${key} body does not match its schema: ${response.text.slice(0, 500)}`).toEqual([]);
    }
    return response;
  };
}
