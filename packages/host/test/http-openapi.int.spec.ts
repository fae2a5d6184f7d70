import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';

/** A GET without fetch's automatic decompression, so the test sees the bytes on the wire. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

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

    it('serves the API reference page from this server alone: no external URL, renderer from /docs/api-reference.js', async () => {
      const docs = await t.request('GET', '/docs');
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = docs.text as string;
      // No absolute URL at all: every script, stylesheet, font and image comes from this server.
      expect(html).not.toMatch(/[a-z][a-z0-9+.-]*:\/\//i);
      expect(html).not.toMatch(/(src|href)=["']?\/\//i);
      expect([...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1])).toEqual(['docs/api-reference.js']);
      // The one link is the inline favicon (a data: URL): nothing is fetched from elsewhere.
      expect(html).not.toMatch(/<link[^>]+href="(?!data:)/i);
      // The renderer is started on the OpenAPI document beside the page, with a bearer token field.
      expect(html).toContain("'/openapi.json'");
      expect(html).toContain('"preferredSecurityScheme":"bearer"');
      expect(html).toContain('"withDefaultFonts":false');
      const csp = docs.headers.get('content-security-policy') ?? '';
      expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
      expect(csp).not.toMatch(/unsafe-eval|https?:|\*/);
      // The spec the page names is there, and is the API's bearer scheme.
      const spec = await t.request('GET', '/openapi.json');
      expect(spec.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    });

    it('serves the renderer as JavaScript, gzipped when asked, with an ETag that answers 304', async () => {
      const plain = await rawGet(`${t.url}/docs/api-reference.js`, {});
      expect(plain.status).toBe(200);
      expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers['x-content-type-options']).toBe('nosniff');
      const source = plain.body.toString('utf8');
      expect(source.length).toBeGreaterThan(1_000_000);
      expect(source).toContain('createApiReference');
      const zipped = await rawGet(`${t.url}/docs/api-reference.js`, { 'accept-encoding': 'gzip, deflate' });
      expect(zipped.status).toBe(200);
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(zipped.headers.vary).toMatch(/accept-encoding/i);
      expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
      expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
      const etag = plain.headers.etag as string;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const again = await rawGet(`${t.url}/docs/api-reference.js`, { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
    });
  });
});
