import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthApp } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { authorizeQuery, oauthError, pkce, REDIRECT_URI, redirectedError, startOAuthHost, type AdminApp, type OAuthTestHost, type Pkce } from './oauth-helpers.js';

// Every rule of GET and POST /oauth/authorize, each asserting the exact RFC error code. Errors
// before the redirect URI is trusted are 400 JSON; after it, a 302 back to the client.
describe.each(testDatabases())('OAuth authorization endpoint on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let app: AdminApp;
    let p: Pkce;
    let user: { token: string; userId: string };
    const get = (overrides: Record<string, string | undefined> = {}) => t.request('GET', `/oauth/authorize?${authorizeQuery(app, p, overrides)}`);

    beforeAll(async () => {
      t = await startOAuthHost(db, transport, { oauth: { mobileClientIds: { production: 'trellis-ios', sandbox: 'trellis-ios-sandbox' } } });
      app = await t.createApp();
      p = await pkce();
      user = await t.register();
    });
    afterAll(() => t?.close());

    it('redirects a valid request to the consent page with the listed parameters', async () => {
      const r = await get({ prompt: 'login consent', login_hint: 'ada@example.com', foo: 'ignored' });
      expect(r.status).toBe(302);
      expect(r.headers.get('cache-control')).toBe('no-store');
      const consent = new URL(r.headers.get('location')!);
      expect(`${consent.origin}${consent.pathname}`).toBe(`${t.url}/oauth/consent`);
      expect(Object.fromEntries(consent.searchParams)).toEqual({
        client_id: app.client_id,
        redirect_uri: REDIRECT_URI,
        scope: 'profile:read',
        state: p.state,
        code_challenge: p.challenge,
        code_challenge_method: 'S256',
        prompt: 'login consent',
        login_hint: 'ada@example.com',
      });
    });

    it('defaults the scope to every scope of the app', async () => {
      const r = await get({ scope: undefined });
      expect(new URL(r.headers.get('location')!).searchParams.get('scope')).toBe('profile:read chat:completions');
    });

    describe('errors shown to the user (400), never redirected', () => {
      it('client_id missing: invalid_request', async () => {
        const r = await get({ client_id: undefined });
        expect(r.status).toBe(400);
        expect(r.headers.get('location')).toBeNull();
        expect(oauthError(r)).toBe('invalid_request');
      });

      it('client_id unknown: invalid_client', async () => {
        const r = await get({ client_id: 'no-such-client' });
        expect(r.status).toBe(400);
        expect(oauthError(r)).toBe('invalid_client');
      });

      it('redirect_uri missing: invalid_request', async () => {
        const r = await get({ redirect_uri: undefined });
        expect(r.status).toBe(400);
        expect(oauthError(r)).toBe('invalid_request');
      });

      it('redirect_uri not registered, compared exactly: invalid_request', async () => {
        for (const uri of ['https://evil.example/callback', `${REDIRECT_URI}/`, `${REDIRECT_URI}?x=1`, REDIRECT_URI.toUpperCase(), 'http://127.0.0.1:9/Callback', 'http://localhost:9/callback']) {
          const r = await get({ redirect_uri: uri });
          expect(r.status, uri).toBe(400);
          expect(r.headers.get('location')).toBeNull();
          expect(oauthError(r)).toBe('invalid_request');
        }
      });

      it('a repeated parameter: invalid_request', async () => {
        const r = await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p)}&client_id=${app.client_id}`);
        expect(r.status).toBe(400);
        expect(oauthError(r)).toBe('invalid_request');
      });

      it('a disabled app: invalid_client', async () => {
        const other = await t.createApp();
        await t.request('POST', `/admin/oauth-apps/${other.id}/disable`, { token: t.adminToken });
        const r = await t.request('GET', `/oauth/authorize?${authorizeQuery(other, p)}`);
        expect(r.status).toBe(400);
        expect(oauthError(r)).toBe('invalid_client');
      });
    });

    describe('errors sent back to the registered redirect URI (302)', () => {
      const expectRedirectError = async (overrides: Record<string, string | undefined>, error: string, withState = true) => {
        const params = redirectedError(await get(overrides));
        expect(params.get('error')).toBe(error);
        expect(params.get('error_description')).toEqual(expect.any(String));
        expect(params.get('iss')).toBe(t.url);
        expect(params.get('state')).toBe(withState ? p.state : null);
        expect(params.has('code')).toBe(false);
      };

      it('response_type missing: invalid_request; not code: unsupported_response_type', async () => {
        await expectRedirectError({ response_type: undefined }, 'invalid_request');
        await expectRedirectError({ response_type: 'token' }, 'unsupported_response_type');
        await expectRedirectError({ response_type: 'code id_token' }, 'unsupported_response_type');
      });

      it('state missing, empty, shorter than 8, longer than 256, or outside A-Z a-z 0-9 - . _ ~: invalid_request', async () => {
        for (const state of [undefined, '', 'a'.repeat(7), 'a'.repeat(257), 'abc def!x', 'abcdefg+', 'abcdefg/', 'abcdefgé']) {
          await expectRedirectError({ state }, 'invalid_request', false);
        }
      });

      it('state of 8 and 256 unreserved characters is accepted', async () => {
        for (const state of ['Az0-._~9', 'x'.repeat(256)]) {
          const r = await get({ state });
          expect(r.status).toBe(302);
          expect(new URL(r.headers.get('location')!).pathname).toBe('/oauth/consent');
        }
      });

      it('code_challenge missing, shorter than 43, longer than 128, or not base64url: invalid_request', async () => {
        for (const code_challenge of [undefined, 'a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`, `${'a'.repeat(42)}=`, `${'a'.repeat(42)}.`]) {
          await expectRedirectError({ code_challenge }, 'invalid_request');
        }
      });

      it('code_challenge of 43 and 128 base64url characters is accepted', async () => {
        for (const code_challenge of ['A'.repeat(43), '-_'.repeat(64)]) expect((await get({ code_challenge })).status).toBe(302);
      });

      it('code_challenge_method missing or not S256 (plain): invalid_request', async () => {
        await expectRedirectError({ code_challenge_method: undefined }, 'invalid_request');
        await expectRedirectError({ code_challenge_method: 'plain' }, 'invalid_request');
        await expectRedirectError({ code_challenge_method: 's256' }, 'invalid_request');
      });

      it('scope unknown, not registered for the app, or malformed: invalid_scope', async () => {
        await expectRedirectError({ scope: 'admin:everything' }, 'invalid_scope');
        await expectRedirectError({ scope: 'mobile:full' }, 'invalid_scope');
        await expectRedirectError({ scope: 'profile:read "quoted"' }, 'invalid_scope');
      });

      it('mobile:full for an app whose client_id is not a configured mobile id: invalid_scope', async () => {
        // An app that holds mobile:full although its client_id is no longer configured (config changed).
        const em = t.kernel.fork();
        const stale = em.create(OAuthApp, {
          id: crypto.randomUUID(),
          clientId: 'former-mobile-app',
          name: 'Old mobile',
          description: '',
          redirectUris: [REDIRECT_URI],
          scopes: ['mobile:full'],
          homepageUrl: null,
          logoUrl: null,
          tokenEpoch: 0,
          disabledAt: null,
          deletedAt: null,
          createdAt: new Date(),
          updatedAt: new Date(),
        } as OAuthApp);
        await em.flush();
        const params = redirectedError(await t.request('GET', `/oauth/authorize?${authorizeQuery({ ...app, client_id: stale.clientId }, p, { scope: 'mobile:full' })}`));
        expect(params.get('error')).toBe('invalid_scope');
      });

      it('mobile:full for a configured mobile client_id is accepted', async () => {
        const mobile = await t.createApp({ client_id: 'trellis-ios', scopes: ['mobile:full', 'profile:read'], redirect_uris: ['com.example.trellis:/oauth/callback'] });
        const r = await t.request('GET', `/oauth/authorize?${authorizeQuery(mobile, p, { scope: 'mobile:full' })}`);
        expect(r.status).toBe(302);
        expect(new URL(r.headers.get('location')!).searchParams.get('scope')).toBe('mobile:full');
      });

      it('prompt with an unknown value, or none with another value: invalid_request', async () => {
        await expectRedirectError({ prompt: 'bogus' }, 'invalid_request');
        await expectRedirectError({ prompt: 'login bogus' }, 'invalid_request');
        await expectRedirectError({ prompt: 'none login' }, 'invalid_request');
        await expectRedirectError({ prompt: 'consent none' }, 'invalid_request');
      });

      it('prompt=none in redirect mode: interaction_required with the state', async () => {
        await expectRedirectError({ prompt: 'none' }, 'interaction_required');
      });

      it('prompt=none with display=popup goes to the consent page, which posts the error back', async () => {
        const r = await get({ prompt: 'none', display: 'popup' });
        expect(r.status).toBe(302);
        const consent = new URL(r.headers.get('location')!);
        expect(consent.pathname).toBe('/oauth/consent');
        expect(consent.searchParams.get('prompt')).toBe('none');
        expect(consent.searchParams.get('display')).toBe('popup');
      });

      it('prompt login, consent and select_account are accepted, alone or together', async () => {
        for (const prompt of ['login', 'consent', 'select_account', 'login consent select_account']) {
          const r = await get({ prompt });
          expect(new URL(r.headers.get('location')!).searchParams.get('prompt')).toBe(prompt);
        }
      });

      it('display other than popup: invalid_request', async () => {
        await expectRedirectError({ display: 'page' }, 'invalid_request');
        await expectRedirectError({ display: 'touch' }, 'invalid_request');
      });

      it('login_hint longer than 320 characters: invalid_request', async () => {
        await expectRedirectError({ login_hint: `${'a'.repeat(320)}@x` }, 'invalid_request');
      });
    });

    describe('POST /oauth/authorize (the user confirms)', () => {
      const body = (overrides: Record<string, string | undefined> = {}) => {
        const out: Record<string, string> = {};
        const all = { client_id: app.client_id, redirect_uri: REDIRECT_URI, scope: 'profile:read', state: p.state, code_challenge: p.challenge, code_challenge_method: 'S256', ...overrides };
        for (const [k, v] of Object.entries(all)) if (v !== undefined) out[k] = v;
        return out;
      };
      const post = (overrides: Record<string, string | undefined> = {}, token = user.token) => t.request('POST', '/oauth/authorize', { token, body: body(overrides) });

      it('answers 200 {redirectTo} with code, state and iss, not cacheable', async () => {
        const r = await post();
        expect(r.status).toBe(200);
        expect(r.headers.get('cache-control')).toBe('no-store');
        const to = new URL(r.body.redirectTo);
        expect(`${to.origin}${to.pathname}`).toBe(REDIRECT_URI);
        expect(to.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(to.searchParams.get('state')).toBe(p.state);
        expect(to.searchParams.get('iss')).toBe(t.url);
      });

      it('keeps the query of a registered redirect URI', async () => {
        const withQuery = await t.createApp({ redirect_uris: ['https://client.example/cb?tenant=7'] });
        const r = await t.request('POST', '/oauth/authorize', { token: user.token, body: body({ client_id: withQuery.client_id, redirect_uri: 'https://client.example/cb?tenant=7' }) });
        expect(r.status).toBe(200);
        expect(r.body.redirectTo).toMatch(/^https:\/\/client\.example\/cb\?tenant=7&code=/);
      });

      it('state is optional here', async () => {
        const r = await post({ state: undefined });
        expect(r.status).toBe(200);
        expect(new URL(r.body.redirectTo).searchParams.has('state')).toBe(false);
      });

      it('needs a user JWT', async () => {
        const anonymous = await t.request('POST', '/oauth/authorize', { body: body() });
        expect(anonymous.status).toBe(401);
        expect(oauthError(anonymous)).toBe('invalid_token');
        const key = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'k' } });
        const withKey = await t.request('POST', '/oauth/authorize', { token: key.body.token, body: body() });
        expect(withKey.status).toBe(403);
        expect(oauthError(withKey)).toBe('access_denied');
      });

      it('applies the same rules, answered as 400', async () => {
        const cases: Array<[Record<string, string | undefined>, string]> = [
          [{ client_id: undefined }, 'invalid_request'],
          [{ client_id: 'no-such-client' }, 'invalid_client'],
          [{ redirect_uri: undefined }, 'invalid_request'],
          [{ redirect_uri: 'https://evil.example/callback' }, 'invalid_request'],
          [{ state: 'short' }, 'invalid_request'],
          [{ code_challenge: undefined }, 'invalid_request'],
          [{ code_challenge: 'a'.repeat(42) }, 'invalid_request'],
          [{ code_challenge_method: undefined }, 'invalid_request'],
          [{ code_challenge_method: 'plain' }, 'invalid_request'],
          [{ scope: 'admin:everything' }, 'invalid_scope'],
          [{ scope: 'mobile:full' }, 'invalid_scope'],
        ];
        for (const [overrides, error] of cases) {
          const r = await post(overrides);
          expect(r.status, JSON.stringify(overrides)).toBe(400);
          expect(oauthError(r), JSON.stringify(overrides)).toBe(error);
        }
      });

      it('refuses a body whose fields are not strings with 400 invalid_request', async () => {
        const r = await t.request('POST', '/oauth/authorize', { token: user.token, body: { ...body(), scope: ['profile:read'] } });
        expect(r.status).toBe(400);
        expect(oauthError(r)).toBe('invalid_request');
      });
    });
  });
});
