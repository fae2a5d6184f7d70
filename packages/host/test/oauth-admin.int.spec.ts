import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabases, transports } from '@trellis/test-support';
import { authorize, authorizeQuery, discover, exchange, oauthError, pkce, REDIRECT_URI, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

// App administration under /admin/oauth-apps (site:admin): the spec's OAuth app state table, and
// the tokens each transition revokes.
describe.each(testDatabases())('OAuth app administration on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let as: oauth.AuthorizationServer;
    let user: { token: string; userId: string };

    beforeAll(async () => {
      t = await startOAuthHost(db, transport, { oauth: { mobileClientIds: { production: 'trellis-ios', sandbox: 'trellis-ios-sandbox' } } });
      as = await discover(t);
      user = await t.register();
    });
    afterAll(() => t?.close());

    const admin = (method: string, path: string, body?: unknown) => t.request(method, `/admin/oauth-apps${path}`, { token: t.adminToken, ...(body === undefined ? {} : { body }) });
    /** A live grant of `app`: its access token works until something revokes it. */
    const grant = async (app: AdminApp) => exchange(as, app, await authorize(t, app, user.token));
    const works = async (tokens: oauth.TokenEndpointResponse) => (await t.request('GET', '/oauth/userinfo', { token: tokens.access_token })).status === 200;
    const refreshes = async (app: AdminApp, tokens: oauth.TokenEndpointResponse) =>
      (await t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id })).status === 200;

    it('needs a JWT with site:admin', async () => {
      expect((await t.request('GET', '/admin/oauth-apps')).status).toBe(401);
      const denied = await t.request('GET', '/admin/oauth-apps', { token: user.token });
      expect(denied.status).toBe(403);
      expect(denied.body.error).toBe('permission_denied');
    });

    it('creates an app with a generated client_id and answers the whole record', async () => {
      const r = await admin('POST', '', {
        name: ' Notes ',
        description: 'Takes notes',
        redirect_uris: ['https://notes.example/cb', 'com.example.notes:/oauth', 'http://localhost:3000/cb', 'http://[::1]:8000/cb'],
        scopes: ['profile:read'],
        homepage_url: 'https://notes.example',
        logo_url: 'https://notes.example/logo.png',
      });
      expect(r.status).toBe(201);
      expect(r.body).toEqual({
        id: expect.any(String),
        client_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
        name: 'Notes',
        description: 'Takes notes',
        redirect_uris: ['https://notes.example/cb', 'com.example.notes:/oauth', 'http://localhost:3000/cb', 'http://[::1]:8000/cb'],
        scopes: ['profile:read'],
        homepage_url: 'https://notes.example',
        logo_url: 'https://notes.example/logo.png',
        status: 'active',
        disabled_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const got = await admin('GET', `/${r.body.id}`);
      expect(got.body).toEqual(r.body);
    });

    it('requires name, redirect_uris and scopes, and refuses unsafe redirect URIs (422)', async () => {
      const base = { name: 'x', redirect_uris: ['https://ok.example/cb'], scopes: ['profile:read'] };
      for (const field of ['name', 'redirect_uris', 'scopes']) {
        const body: Record<string, unknown> = { ...base };
        delete body[field];
        const r = await admin('POST', '', body);
        expect(r.status, field).toBe(422);
        expect(r.body.error).toBe('validation_failed');
      }
      for (const uri of ['http://notes.example/cb', 'https://ok.example/cb#frag', 'javascript:alert(1)', 'data:text/html,x', 'myapp:/cb', 'relative/path', 'https://user:pw@ok.example/cb']) {
        const r = await admin('POST', '', { ...base, redirect_uris: [uri] });
        expect(r.status, uri).toBe(422);
        expect(r.body.error).toBe('invalid_redirect_uri');
        expect(r.body.details[0].field).toBe('redirect_uris.0');
      }
      const unknown = await admin('POST', '', { ...base, scopes: ['profile:write'] });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error).toBe('unknown_scope');
    });

    it('gives mobile:full only to the configured production and sandbox client_ids', async () => {
      const refused = await admin('POST', '', { name: 'Rogue', redirect_uris: ['com.example.rogue:/cb'], scopes: ['mobile:full'] });
      expect(refused.status).toBe(422);
      expect(refused.body.error).toBe('scope_not_allowed');
      for (const client_id of ['trellis-ios', 'trellis-ios-sandbox']) {
        const r = await admin('POST', '', { name: client_id, client_id, redirect_uris: ['com.example.trellis:/cb'], scopes: ['mobile:full'] });
        expect(r.status).toBe(201);
        expect(r.body.client_id).toBe(client_id);
      }
      const later = await admin('POST', '', { name: 'Later', redirect_uris: ['https://later.example/cb'], scopes: ['profile:read'] });
      const patched = await admin('PATCH', `/${later.body.id}`, { scopes: ['profile:read', 'mobile:full'] });
      expect(patched.status).toBe(422);
      expect(patched.body.error).toBe('scope_not_allowed');
    });

    it('never reuses a client_id: 409 client_id_taken, even after deletion', async () => {
      const first = await admin('POST', '', { name: 'A', client_id: 'fixed-id', redirect_uris: ['https://a.example/cb'], scopes: ['profile:read'] });
      expect(first.status).toBe(201);
      expect((await admin('POST', '', { name: 'B', client_id: 'fixed-id', redirect_uris: ['https://b.example/cb'], scopes: ['profile:read'] })).body.error).toBe('client_id_taken');
      await admin('DELETE', `/${first.body.id}`);
      const again = await admin('POST', '', { name: 'C', client_id: 'fixed-id', redirect_uris: ['https://c.example/cb'], scopes: ['profile:read'] });
      expect(again.status).toBe(409);
      expect(again.body.error).toBe('client_id_taken');
    });

    it('lists with page, pageSize and search (name or client_id, any case), without deleted apps', async () => {
      const tag = `zq${Date.now().toString(36)}`;
      const made: AdminApp[] = [];
      for (let i = 0; i < 5; i++) made.push(await t.createApp({ name: `${tag.toUpperCase()} app ${i}` }));
      const page1 = await admin('GET', `?search=${tag}&pageSize=2&page=1`);
      expect(page1.status).toBe(200);
      expect(page1.body).toMatchObject({ total: 5, page: 1, size: 2 });
      expect(page1.body.items).toHaveLength(2);
      const page3 = await admin('GET', `?search=${tag}&pageSize=2&page=3`);
      expect(page3.body.items).toHaveLength(1);
      const all = [...page1.body.items, ...(await admin('GET', `?search=${tag}&pageSize=2&page=2`)).body.items, ...page3.body.items];
      expect(new Set(all.map((a: AdminApp) => a.id)).size).toBe(5);
      const byClientId = await admin('GET', `?search=${made[2]!.client_id}`);
      expect(byClientId.body.items.map((a: AdminApp) => a.id)).toEqual([made[2]!.id]);
      await admin('DELETE', `/${made[0]!.id}`);
      expect((await admin('GET', `?search=${tag}`)).body.total).toBe(4);
      const defaults = await admin('GET', '');
      expect(defaults.body).toMatchObject({ page: 1, size: 20 });
    });

    it('PATCH of name or description keeps tokens; of scopes or redirect_uris revokes them all', async () => {
      const app = await t.createApp();
      const tokens = await grant(app);
      const renamed = await admin('PATCH', `/${app.id}`, { name: 'Renamed', description: 'new', homepage_url: 'https://home.example' });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ name: 'Renamed', description: 'new', homepage_url: 'https://home.example', scopes: app.scopes });
      // the same scopes in another order are no change
      await admin('PATCH', `/${app.id}`, { scopes: [...app.scopes].reverse() });
      expect(await works(tokens)).toBe(true);

      await admin('PATCH', `/${app.id}`, { scopes: ['profile:read'] });
      expect(await works(tokens)).toBe(false);
      expect(await refreshes(app, tokens)).toBe(false);

      const again = await grant({ ...app, scopes: ['profile:read'] });
      await admin('PATCH', `/${app.id}`, { redirect_uris: [REDIRECT_URI, 'https://second.example/cb'] });
      expect(await works(again)).toBe(false);
      expect(await refreshes(app, again)).toBe(false);
      // the app itself works on
      expect(await works(await grant(app))).toBe(true);

      const cleared = await admin('PATCH', `/${app.id}`, { homepage_url: null });
      expect(cleared.body.homepage_url).toBeNull();
    });

    it('DELETE soft-deletes (204), revokes every token, and the app is gone everywhere', async () => {
      const app = await t.createApp();
      const tokens = await grant(app);
      const r = await admin('DELETE', `/${app.id}`);
      expect(r.status).toBe(204);
      expect(await works(tokens)).toBe(false);
      expect(await refreshes(app, tokens)).toBe(false);
      expect((await admin('GET', `/${app.id}`)).status).toBe(404);
      expect((await admin('DELETE', `/${app.id}`)).body.error).toBe('oauth_app_not_found');
      expect((await admin('PATCH', `/${app.id}`, { name: 'x' })).status).toBe(404);
      expect((await t.request('GET', `/oauth/apps/${app.client_id}/public`)).status).toBe(404);
      const p = await pkce();
      expect(oauthError(await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p)}`))).toBe('invalid_client');
    });

    it('disable revokes every token and stops the app; enable lets it work again with new grants', async () => {
      const app = await t.createApp();
      const tokens = await grant(app);
      const disabled = await admin('POST', `/${app.id}/disable`);
      expect(disabled.status).toBe(200);
      expect(disabled.body.status).toBe('disabled');
      expect(disabled.body.disabled_at).toEqual(expect.any(String));
      expect(await works(tokens)).toBe(false);
      const refused = await t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id });
      expect(oauthError(refused)).toBe('invalid_client');
      expect((await t.request('GET', `/oauth/apps/${app.client_id}/public`)).status).toBe(404);

      const enabled = await admin('POST', `/${app.id}/enable`);
      expect(enabled.body).toMatchObject({ status: 'active', disabled_at: null });
      expect(await works(tokens)).toBe(false); // revoked tokens stay revoked
      expect(await refreshes(app, tokens)).toBe(false);
      expect(await works(await grant(app))).toBe(true);
    });

    it('answers 404 for malformed and unknown ids', async () => {
      expect((await admin('GET', '/not-a-uuid')).status).toBe(404);
      expect((await admin('POST', '/0190a0a0-0000-7000-8000-000000000000/disable')).body.error).toBe('oauth_app_not_found');
    });

    it('serves the public view of an active app', async () => {
      const app = await t.createApp({ scopes: ['profile:read', 'chat:completions'], logo_url: 'https://x.example/logo.png' });
      const r = await t.request('GET', `/oauth/apps/${app.client_id}/public`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        name: 'Test app',
        description: 'An app under test',
        logo_url: 'https://x.example/logo.png',
        homepage_url: null,
        redirect_uris: [REDIRECT_URI],
        scopes: ['profile:read', 'chat:completions'],
        scope_descriptions: [
          { scope: 'profile:read', description: expect.any(String) },
          { scope: 'chat:completions', description: expect.any(String) },
        ],
      });
      const missing = await t.request('GET', '/oauth/apps/nobody/public');
      expect(missing.status).toBe(404);
      expect(oauthError(missing)).toBe('invalid_client');
    });
  });
});
