import { request as httpRequest } from 'node:http';
import { UserService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** A raw HTTP/1.1 GET with a Host header of our choosing (fetch does not let a caller set Host). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Small hardening items of issue 10: pinned OAuth issuer, /docs headers, no-store on responses
// that carry credentials, unknown API-key scopes refused, SQLite synchronous=FULL, and a 413 that
// every client reads (a lingering close on uWebSockets.js).
describe.each(testDatabases())('hardening on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { server: { trustProxy: true } } });
    });
    afterAll(() => t?.close());

    it('pins the OAuth issuer: a forged Host or X-Forwarded-Host moves neither the metadata nor the consent redirect', async () => {
      const metadata = await rawGet(`${t.url}/.well-known/oauth-authorization-server`, { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
      expect(metadata.status).toBe(200);
      const body = JSON.parse(metadata.body);
      expect(body.issuer).toBe(t.url);
      expect(metadata.body).not.toContain('evil.example');
      const page = await rawGet(`${t.url}/oauth/consent`, { host: 'evil.example', 'x-forwarded-host': 'evil.example' });
      expect(page.body).not.toContain('evil.example');
    });

    it('serves /docs with a CSP (frame-ancestors none), nosniff and no framing', async () => {
      const docs = await fetch(`${t.url}/docs`);
      expect(docs.status).toBe(200);
      const csp = docs.headers.get('content-security-policy') ?? '';
      expect(csp).toMatch(/default-src 'none'/);
      expect(csp).toMatch(/frame-ancestors 'none'/);
      expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
      expect(csp).toMatch(/connect-src 'self'/);
      expect(docs.headers.get('x-content-type-options')).toBe('nosniff');
      expect(docs.headers.get('x-frame-options')).toBe('DENY');
      // The hashes pin the page's own inline script and style.
      const html = await docs.text();
      const { createHash } = await import('node:crypto');
      const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
      expect(csp).toContain(`'sha256-${createHash('sha256').update(script).digest('base64')}'`);
    });

    it('sends Cache-Control: no-store with every response that issues a credential', async () => {
      const email = `nostore-${transport}-${Date.now()}@example.com`;
      const registered = await t.request('POST', '/auth/register', { body: { email, password: 'correct horse battery' } });
      expect(registered.status).toBe(201);
      expect(registered.headers.get('cache-control')).toBe('no-store');
      const login = await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } });
      expect(login.headers.get('cache-control')).toBe('no-store');
      const token = login.body.token as string;
      for (const path of ['/auth/api-keys', '/auth/agent-tokens']) {
        const issued = await t.request('POST', path, { token, body: { name: 'cached?' } });
        expect(issued.status).toBe(201);
        expect(issued.headers.get('cache-control')).toBe('no-store');
      }
      const admin = await t.register();
      await t.kernel.get(UserService).update(t.kernel.fork(), admin.userId, { isAdministrator: true });
      const adminLogin = await t.request('POST', '/auth/login', { body: { email: admin.email, password: 'correct horse battery' } });
      const become = await t.request('POST', `/admin/user/${registered.body.user.id}/become`, { token: adminLogin.body.token });
      expect(become.status).toBe(200);
      expect(become.headers.get('cache-control')).toBe('no-store');
      // Ordinary reads are not marked.
      expect((await t.request('GET', '/auth/me', { token })).headers.get('cache-control')).toBeNull();
    });

    it('refuses unknown scope names when an API key or agent token is created', async () => {
      const user = await t.register();
      const bad = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'typo', scopes: ['documents:reed'] } });
      expect(bad.status).toBe(422);
      expect(bad.body.error).toBe('unknown_scope');
      expect(bad.body.details).toEqual([expect.objectContaining({ field: 'scopes', constraint: 'unknown_scope' })]);
      const agent = await t.request('POST', '/auth/agent-tokens', { token: user.token, body: { name: 'typo', scopes: ['documents:read', 'nope:nope'] } });
      expect([agent.status, agent.body.error]).toEqual([422, 'unknown_scope']);
      const good = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'reader', scopes: ['documents:read', 'mobile:full'] } });
      expect(good.status).toBe(201);
      expect((await t.request('GET', '/auth/api-keys', { token: user.token })).body.items.map((k: { name: string }) => k.name)).toEqual(['reader']);
    });

    it.runIf(db.name === 'sqlite')('runs SQLite with synchronous=FULL by default', async () => {
      const rows = (await t.kernel.fork().getConnection().execute('PRAGMA synchronous')) as Array<{ synchronous: number }>;
      expect(rows[0]!.synchronous).toBe(2);
    });

    it('answers every oversized body with a 413 the client reads, however it is sent', async () => {
      const chunk = new Uint8Array(64 * 1024).fill(120);
      const streamed = (chunks: number) =>
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (chunks-- <= 0) return controller.close();
            controller.enqueue(chunk);
          },
        });
      const outcomes: string[] = [];
      for (let i = 0; i < 16; i++) {
        // Declared (content-length) and streamed (chunked) bodies of 2 to 5 MiB against the 1 MiB limit.
        const body = i % 2 ? 'x'.repeat((2 + (i % 4)) * 1024 * 1024) : streamed(32 + 16 * (i % 4));
        try {
          const response = await fetch(`${t.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
          outcomes.push(String(response.status));
          await response.arrayBuffer();
        } catch (error) {
          outcomes.push(`failed: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}`);
        }
      }
      expect(outcomes).toEqual(Array(16).fill('413'));
      // The server is still fine afterwards.
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    });
  });
});
