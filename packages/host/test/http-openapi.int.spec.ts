import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';

// GET /openapi.json is a valid OpenAPI 3.1 document by an independent validator, whatever the
// transport; the docs page renders it without any network access beyond its own server.
describe.each(testDatabases())('OpenAPI document on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport);
    });
    afterAll(() => t?.close());

    it('passes the OpenAPI 3.1 schema validator', async () => {
      const response = await t.request('GET', '/openapi.json');
      expect(response.status).toBe(200);
      const validator = new Validator();
      const result = await validator.validate(response.body);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.1');
    });

    it('lets any origin read it (CORS), since it describes a public API', async () => {
      const response = await t.request('GET', '/openapi.json', { headers: { origin: 'https://elsewhere.example' } });
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
    });

    it('serves a docs page whose every asset is inline', async () => {
      const docs = await t.request('GET', '/docs');
      expect(docs.status).toBe(200);
      expect(docs.text).toContain('openapi.json');
      // No external script, stylesheet, font or image.
      expect(docs.text).not.toMatch(/<script[^>]+src=/i);
      expect(docs.text).not.toMatch(/<link[^>]+href=/i);
      expect(docs.text).not.toMatch(/url\(\s*['"]?https?:/i);
      expect(docs.text).not.toMatch(/(src|href)=["']https?:/i);
    });
  });
});
