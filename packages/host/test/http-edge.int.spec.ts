import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';

// The HTTP edge behaves the same on every transport and database: error shapes, limits, CORS,
// request ids, health probes and the OpenAPI document.
describe.each(testDatabases())('HTTP edge on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { server: { maxBodyBytes: 4096, corsOrigins: ['https://app.example'] } } });
    });
    afterAll(() => t?.close());

    it('answers health and readiness probes', async () => {
      expect((await t.request('GET', '/healthz')).body).toEqual({ status: 'ok' });
      const ready = await t.request('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready', database: true });
    });

    it('gives every response an x-request-id, and echoes a well-formed incoming one', async () => {
      const generated = await t.request('GET', '/healthz');
      expect(generated.headers.get('x-request-id')).toMatch(/.+/);
      const echoed = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-abc.123' } });
      expect(echoed.headers.get('x-request-id')).toBe('trace-abc.123');
      const refused = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
      expect(refused.headers.get('x-request-id')).not.toBe('bad id with spaces');
    });

    it('answers unknown routes with 404 and wrong methods with 405 and Allow', async () => {
      const missing = await t.request('GET', '/nope');
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ error: 'route_not_found' });
      const wrong = await t.request('DELETE', '/auth/login');
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toBe('POST');
      expect(wrong.body.error).toBe('method_not_allowed');
    });

    it('refuses malformed JSON with 400 invalid_json', async () => {
      const r = await t.request('POST', '/auth/login', { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_json');
      expect(typeof r.body.message).toBe('string');
    });

    it('refuses a body that is not an object with 400', async () => {
      const r = await t.request('POST', '/auth/login', { raw: '[1,2]', headers: { 'content-type': 'application/json' } });
      expect(r.status).toBe(400);
    });

    it('refuses wrong types and unknown fields with 422 and per-field details', async () => {
      const wrongType = await t.request('POST', '/auth/login', { body: { email: 42, password: 'x' } });
      expect(wrongType.status).toBe(422);
      expect(wrongType.body.error).toBe('validation_failed');
      expect(wrongType.body.details).toContainEqual(expect.objectContaining({ field: 'email', constraint: 'isEmail' }));
      const unknown = await t.request('POST', '/auth/login', { body: { email: 'a@b.co', password: 'x', admin: true } });
      expect(unknown.status).toBe(422);
      expect(unknown.body.details).toContainEqual({ field: 'admin', constraint: 'whitelistValidation', message: 'is not an accepted field' });
    });

    it('refuses an unsupported content type with 415', async () => {
      const r = await t.request('POST', '/auth/login', { raw: 'email=a', headers: { 'content-type': 'text/plain' } });
      expect(r.status).toBe(415);
      expect(r.body.error).toBe('unsupported_media_type');
    });

    it('refuses an oversized body with 413, whether declared or streamed', async () => {
      const big = JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(10_000) });
      const declared = await t.request('POST', '/auth/login', { raw: big, headers: { 'content-type': 'application/json' } });
      expect(declared.status).toBe(413);
      expect(declared.body.error).toBe('payload_too_large');
      // A chunked body carries no content-length: the limit applies while it arrives.
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 5; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(2000)));
          controller.close();
        },
      });
      const chunked = await fetch(`${t.url}/auth/login`, { method: 'POST', body: stream, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
      expect(chunked.status).toBe(413);
    });

    it('answers missing, malformed, unknown and expired credentials with 401 and a challenge', async () => {
      const missing = await t.request('GET', '/auth/me');
      expect(missing.status).toBe(401);
      expect(missing.body.error).toBe('missing_credentials');
      expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const malformed = await t.request('GET', '/auth/me', { headers: { authorization: 'Basic abc' } });
      expect(malformed.status).toBe(401);
      expect(malformed.body.error).toBe('invalid_authorization_header');
      const garbage = await t.request('GET', '/auth/me', { token: 'not-a-token' });
      expect(garbage.status).toBe(401);
      expect(garbage.body.error).toBe('invalid_token');
      const forged = await t.request('GET', '/auth/me', { token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl' });
      expect(forged.status).toBe(401);
      expect(forged.body.error).toBe('invalid_token');
      const { JwtService } = await import('@trellis/core');
      const user = await t.register();
      const expired = await t.kernel.get(JwtService).sign(user.userId, { ttlSeconds: -10 });
      const r = await t.request('GET', '/auth/me', { token: expired.token });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('token_expired');
    });

    it('applies the default CORS policy: listed origins only', async () => {
      const allowed = await t.request('GET', '/healthz', { headers: { origin: 'https://app.example' } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
      const other = await t.request('GET', '/healthz', { headers: { origin: 'https://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const preflight = await t.request('OPTIONS', '/auth/login', {
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-methods')).toBe('POST');
    });

    it('serves a valid OpenAPI 3.1 document listing every route, and the docs page', async () => {
      const r = await t.request('GET', '/openapi.json');
      expect(r.status).toBe(200);
      expect(r.body.openapi).toBe('3.1.0');
      for (const route of t.kernel.routes.filter((x) => !x.hidden)) {
        const path = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
        expect(r.body.paths[path]?.[route.method.toLowerCase()], `${route.method} ${route.path}`).toBeDefined();
      }
      expect(r.body.paths['/auth/register'].post.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/RegisterRequest');
      const docs = await t.request('GET', '/docs');
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
      expect(docs.text).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)/);
    });
  });
});
