import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import * as oauth from 'oauth4webapi';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provide, rateLimiterServiceIdentifier, sha256Hex, UserService } from '@trellis/core';
import { createHost } from '@trellis/host';
import { RedisRateLimiter } from '@trellis/ratelimit-redis';
import { testDatabases, testJwtSecret, testRedisUrl, transports } from '@trellis/test-support';
import { authorize, authorizeQuery, discover, exchange, insecure, oauthError, oauthModules, pkce, REDIRECT_URI, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

// Grace window, reuse hook, rate limits (in process and Redis), and that no token, code or
// secret is stored or logged in clear.
describe.each(testDatabases())('OAuth security on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    describe('refresh grace window (oauth.refreshGraceSeconds)', () => {
      let t: OAuthTestHost;
      let app: AdminApp;
      beforeAll(async () => {
        t = await startOAuthHost(db, transport, { oauth: { refreshGraceSeconds: 60 } });
        app = await t.createApp();
      });
      afterAll(() => t?.close());

      it('tolerates a benign double refresh: both parallel refreshes succeed and the family lives on', async () => {
        const user = await t.register();
        const tokens = await exchange(await discover(t), app, await authorize(t, app, user.token));
        const body = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id };
        const [a, b] = await Promise.all([t.form('/oauth/token', body), t.form('/oauth/token', body)]);
        expect([a.status, b.status]).toEqual([200, 200]);
        expect(a.body.refresh_token).not.toBe(b.body.refresh_token);
        for (const r of [a, b]) expect((await t.request('GET', '/oauth/userinfo', { token: r.body.access_token })).status).toBe(200);
        // and a third, sequential replay inside the window too
        const c = await t.form('/oauth/token', body);
        expect(c.status).toBe(200);
        expect((await t.form('/oauth/token', { ...body, refresh_token: c.body.refresh_token })).status).toBe(200);
      });
    });

    describe('reuse detection hook and rate limits', () => {
      let t: OAuthTestHost;
      let app: AdminApp;
      beforeAll(async () => {
        t = await startOAuthHost(db, transport, { server: { trustProxy: true }, oauth: { rateLimit: { perIp: 5, perClient: 8, windowSeconds: 3600 } } });
        app = await t.createApp();
      });
      afterAll(() => t?.close());

      it('calls the oauth.token_reuse_detected hook with ids only', async () => {
        const seen: unknown[] = [];
        const off = t.kernel.hooks.on('oauth.token_reuse_detected', (payload) => void seen.push(payload));
        try {
          const user = await t.register();
          const tokens = await exchange(await discover(t), app, await authorize(t, app, user.token));
          const body = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id };
          const ip = { 'x-forwarded-for': '203.0.113.50' };
          await t.form('/oauth/token', body, ip);
          await t.form('/oauth/token', body, ip);
          expect(seen).toEqual([
            { kind: 'refresh_token', clientId: app.client_id, userId: user.userId, tokenFamily: expect.any(String), ip: '203.0.113.50', userAgent: expect.any(String) },
          ]);
        } finally {
          off();
        }
      });

      it('limits requests per address: 429 temporarily_unavailable with Retry-After', async () => {
        const app = await t.createApp();
        const p = await pkce();
        const ip = { 'x-forwarded-for': '198.51.100.7' };
        for (let i = 0; i < 5; i++) expect((await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p)}`, { headers: ip })).status).toBe(302);
        const limited = await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p)}`, { headers: ip });
        expect(limited.status).toBe(429);
        expect(oauthError(limited)).toBe('temporarily_unavailable');
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        // another address is not affected, and other endpoints count apart
        expect((await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p)}`, { headers: { 'x-forwarded-for': '198.51.100.8' } })).status).toBe(302);
        expect((await t.form('/oauth/revoke', { token: 'x' }, ip)).status).toBe(200);
        for (let i = 0; i < 5; i++) await t.form('/oauth/token', { grant_type: 'nope' }, ip);
        const token = await t.form('/oauth/token', { grant_type: 'nope' }, ip);
        expect(token.status).toBe(429);
        expect(token.headers.get('cache-control')).toBe('no-store');
        for (let i = 0; i < 4; i++) await t.form('/oauth/revoke', { token: 'x' }, ip);
        expect((await t.form('/oauth/revoke', { token: 'x' }, ip)).status).toBe(429);
      });

      it('limits requests per client across addresses', async () => {
        const other = await t.createApp();
        const statuses: number[] = [];
        for (let i = 0; i < 9; i++) {
          const r = await t.form('/oauth/revoke', { token: 'x', client_id: other.client_id }, { 'x-forwarded-for': `192.0.2.${i + 1}` });
          statuses.push(r.status);
        }
        expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 429]);
      });
    });

    describe.skipIf(!testRedisUrl)('rate limits counted in Redis (@trellis/ratelimit-redis)', () => {
      let t: OAuthTestHost;
      let limiter: RedisRateLimiter;
      const keyPrefix = `trellis-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
      beforeAll(async () => {
        limiter = new RedisRateLimiter({ url: testRedisUrl!, keyPrefix });
        t = await startOAuthHost(db, transport, { server: { trustProxy: true }, oauth: { rateLimit: { perIp: 3, windowSeconds: 60 } } }, { adapters: [provide(rateLimiterServiceIdentifier, limiter)] });
      });
      afterAll(async () => {
        await t?.close();
        await limiter?.close();
      });

      it('uses the bound adapter and answers 429 with Retry-After', async () => {
        expect(t.kernel.get(rateLimiterServiceIdentifier)).toBe(limiter);
        const ip = { 'x-forwarded-for': '203.0.113.9' };
        for (let i = 0; i < 3; i++) expect((await t.form('/oauth/revoke', { token: 'x' }, ip)).status).toBe(200);
        const limited = await t.form('/oauth/revoke', { token: 'x' }, ip);
        expect(limited.status).toBe(429);
        expect(oauthError(limited)).toBe('temporarily_unavailable');
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      });
    });

    describe('secrets at rest and in logs', () => {
      const lines: string[] = [];
      let t: OAuthTestHost;
      let close: () => Promise<void>;

      beforeAll(async () => {
        // A host that logs everything, SQL statements included, into memory.
        const handle = await db.create();
        const sink = new Writable({
          write(chunk, _encoding, done) {
            lines.push(String(chunk));
            done();
          },
        });
        const host = createHost({
          config: {
            server: { host: '127.0.0.1', port: 0, transport },
            auth: { jwtSecret: testJwtSecret },
            database: { debug: true },
            log: { level: 'trace' },
            oauth: { rateLimit: { perIp: 100_000, perClient: 100_000 } },
          },
          database: handle.adapter,
          modules: oauthModules,
          logger: pino({ level: 'trace' }, sink),
        });
        await host.start();
        close = async () => {
          await host.stop();
          await handle.drop();
        };
        const base = host.url;
        const request = async (method: string, path: string, options: { body?: unknown; token?: string } = {}) => {
          const response = await fetch(`${base}${path}`, {
            method,
            redirect: 'manual',
            headers: { ...(options.body ? { 'content-type': 'application/json' } : {}), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
            body: options.body ? JSON.stringify(options.body) : undefined,
          });
          const text = await response.text();
          return { status: response.status, headers: response.headers, text, body: text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
        };
        const register = async () => {
          const email = `secret-${randomBytes(4).toString('hex')}@example.com`;
          const r = await request('POST', '/auth/register', { body: { email, password: 'correct horse battery' } });
          return { token: r.body.token as string, userId: r.body.user.id as string, email };
        };
        const admin = await register();
        await host.kernel.get(UserService).update(host.kernel.fork(), admin.userId, { isSiteAdmin: true });
        t = {
          host,
          kernel: host.kernel,
          url: base,
          wsUrl: base.replace(/^http/, 'ws'),
          request,
          register,
          close,
          adminToken: admin.token,
          form: (path, fields, headers = {}) =>
            fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields) }).then(async (r) => {
              const text = await r.text();
              return { status: r.status, headers: r.headers, text, body: JSON.parse(text) };
            }),
          createApp: async (body = {}) =>
            (await request('POST', '/admin/oauth-apps', { token: admin.token, body: { name: 'Secret test', redirect_uris: [REDIRECT_URI], scopes: ['profile:read'], ...body } })).body,
        } as OAuthTestHost;
      });
      afterAll(() => close?.());

      it('stores tokens and codes only as SHA-256 digests and never logs them', async () => {
        const app = await t.createApp();
        const user = await t.register();
        const as = await discover(t);
        const client = { client_id: app.client_id };
        const flow = await authorize(t, app, user.token);
        const code = new URL(flow.redirectTo).searchParams.get('code')!;
        const tokens = await exchange(as, app, flow);
        const rotated = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
        await oauth.userInfoRequest(as, client, rotated.access_token, insecure);
        await t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id }); // reuse
        await oauth.revocationRequest(as, client, oauth.None(), rotated.access_token, insecure);

        const secrets = { code, verifier: flow.verifier, access: tokens.access_token, refresh: tokens.refresh_token!, access2: rotated.access_token, refresh2: rotated.refresh_token!, jwt: user.token };
        const connection = t.kernel.fork().getConnection();
        const dump: string[] = [];
        for (const table of ['oauth_apps', 'oauth_authorization_codes', 'oauth_token_families', 'oauth_tokens', 'oauth_audit_events']) {
          dump.push(JSON.stringify(await connection.execute(`select * from ${table}`)));
        }
        const stored = dump.join('\n');
        const logged = lines.join('');
        expect(lines.length).toBeGreaterThan(10); // the SQL log is on: the check below is not vacuous
        for (const [name, secret] of Object.entries(secrets)) {
          expect(stored.includes(secret), `${name} stored in clear`).toBe(false);
          expect(logged.includes(secret), `${name} logged in clear`).toBe(false);
        }
        for (const token of [tokens.access_token, tokens.refresh_token!, rotated.access_token, rotated.refresh_token!, code]) {
          expect(stored.includes(sha256Hex(token))).toBe(true);
        }
        expect(logged).toMatch(/OAuth token reuse detected/);
      });
    });
  });
});
