import { aiModule, AnonymousToken, billingModule, botsModule, conversationsModule, realtimeModule, sha256Hex, toolsModule } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorize, oauthError, REDIRECT_URI, startOAuthHost, type OAuthTestHost } from './oauth-helpers.js';

// Anonymous sign-in and token exchange of the tool service (spec: Tool service, authentication
// rule 8), on both transports and both databases.
describe.each(testDatabases())('tool service sign-in and token exchange on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let counter = 0;
    const identifier = () => `device-${process.pid}-${Date.now()}-${++counter}`;
    const signIn = (anonymous: string, passwd = 'a long secret') => t.request('POST', '/tool/home/oauth/anonymous', { body: { anonymous, passwd } });
    const rtoken = (fields: Record<string, string>, bearer?: string) => t.form('/tool/home/oauth/rtoken', fields, bearer ? { authorization: `Bearer ${bearer}` } : {});
    const canUse = async (token: string) => (await t.request('POST', '/tool/vdb/Probe', { token, body: { content: 'probe' } })).status;

    beforeAll(async () => {
      t = await startOAuthHost(db, transport, { tools: { anonymous: { rateLimit: { perIdentifier: 5, perIp: 10_000 } } } }, { modules: [aiModule, billingModule, realtimeModule, botsModule, conversationsModule, toolsModule] });
    });
    afterAll(() => t?.close());

    it('creates an anonymous user with a 1-hour access token and a 30-day refresh token, then signs it in again', async () => {
      const id = identifier();
      const first = await signIn(id);
      expect(first.status, first.text).toBe(200);
      expect(first.headers.get('cache-control')).toBe('no-store');
      expect(first.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, refresh_expires_in: 2_592_000, anonymous: id });
      expect(first.body.access_token).toMatch(/^tan_[A-Za-z0-9_-]{43}$/);
      expect(first.body.refresh_token).toMatch(/^tan_[A-Za-z0-9_-]{43}$/);
      const em = t.kernel.fork();
      const access = await em.findOneOrFail(AnonymousToken, { tokenHash: sha256Hex(first.body.access_token) });
      const refresh = await em.findOneOrFail(AnonymousToken, { tokenHash: sha256Hex(first.body.refresh_token) });
      // Stored only as digests; lifetimes as the spec says.
      expect(access.kind).toBe('access');
      expect(Math.round((access.expiresAt.getTime() - access.createdAt.getTime()) / 1000)).toBeCloseTo(3600, -1);
      expect(Math.round((refresh.expiresAt.getTime() - refresh.createdAt.getTime()) / 86_400_000)).toBe(30);
      expect(await canUse(first.body.access_token)).toBe(201);
      expect(await canUse(first.body.refresh_token)).toBe(401);

      const again = await signIn(id);
      expect(again.status).toBe(200);
      expect(again.body.user_id).toBe(first.body.user_id);
      expect(again.body.access_token).not.toBe(first.body.access_token);
      const wrong = await signIn(id, 'another password');
      expect([wrong.status, wrong.body.error]).toEqual([401, 'invalid_credentials']);
      for (const body of [{}, { anonymous: 'short', passwd: 'a long secret' }, { anonymous: identifier(), passwd: 'short' }, { anonymous: 'bad id with spaces', passwd: 'a long secret' }, { anonymous: 5, passwd: 'a long secret' }]) {
        const r = await t.request('POST', '/tool/home/oauth/anonymous', { body });
        expect(r.status, JSON.stringify(body)).toBe(400);
      }
    });

    it('signs in the same new identifier from parallel requests as one user', async () => {
      const id = identifier();
      const results = await Promise.all([1, 2, 3].map(() => signIn(id)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(new Set(results.map((r) => r.body.user_id)).size).toBe(1);
    });

    it('rotates a single-use refresh token, revokes the old access token it carries, and revokes the family on reuse', async () => {
      const first = (await signIn(identifier())).body;
      const second = await rtoken({ grant_type: 'refresh_token', refresh_token: first.refresh_token }, first.access_token);
      expect(second.status, second.text).toBe(200);
      expect(second.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, user_id: first.user_id });
      expect(await canUse(first.access_token)).toBe(401);
      expect(await canUse(second.body.access_token)).toBe(201);

      const third = await rtoken({ grant_type: 'refresh_token', refresh_token: second.body.refresh_token });
      expect(third.status).toBe(200);
      expect(await canUse(second.body.access_token)).toBe(201);
      // Reusing a rotated refresh token ends every token of the sign-in.
      const reuse = await rtoken({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      expect([reuse.status, oauthError(reuse)]).toEqual([400, 'invalid_grant']);
      expect(await canUse(third.body.access_token)).toBe(401);
      const afterReuse = await rtoken({ grant_type: 'refresh_token', refresh_token: third.body.refresh_token });
      expect([afterReuse.status, oauthError(afterReuse)]).toEqual([400, 'invalid_grant']);
    });

    it('lets exactly one of parallel rotations of one refresh token through', async () => {
      const first = (await signIn(identifier())).body;
      const results = await Promise.all([1, 2, 3].map(() => rtoken({ grant_type: 'refresh_token', refresh_token: first.refresh_token })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    });

    it('answers 400, 401 and 403 as the spec rows say', async () => {
      const a = (await signIn(identifier())).body;
      const b = (await signIn(identifier())).body;
      const mismatch = await rtoken({ grant_type: 'refresh_token', refresh_token: a.refresh_token }, b.access_token);
      expect([mismatch.status, oauthError(mismatch)]).toEqual([403, 'access_denied']);
      // The refused request did not use the refresh token up.
      expect((await rtoken({ grant_type: 'refresh_token', refresh_token: a.refresh_token })).status).toBe(200);
      expect(oauthError(await rtoken({ refresh_token: b.refresh_token }))).toBe('invalid_request');
      expect(oauthError(await rtoken({ grant_type: 'password', refresh_token: b.refresh_token }))).toBe('unsupported_grant_type');
      expect(oauthError(await rtoken({ grant_type: 'refresh_token' }))).toBe('invalid_request');
      expect(oauthError(await rtoken({ grant_type: 'refresh_token', refresh_token: 'tan_unknown' }))).toBe('invalid_grant');
      expect(oauthError(await rtoken({ grant_type: 'refresh_token', refresh_token: 'nonsense' }))).toBe('invalid_request');
      const badHeader = await rtoken({ grant_type: 'refresh_token', refresh_token: b.refresh_token }, 'two words');
      expect(badHeader.status).toBe(401);
      const json = await t.request('POST', '/tool/home/oauth/rtoken', { body: { grant_type: 'refresh_token', refresh_token: b.refresh_token } });
      expect(json.status).toBe(415);
    });

    it("exchanges an authorization code of Trellis's OAuth server, and rotates its refresh token", async () => {
      const app = await t.createApp();
      const user = await t.register();
      const flow = await authorize(t, app, user.token);
      const code = new URL(flow.redirectTo).searchParams.get('code')!;
      const fields = { grant_type: 'authorization_code', code, client_id: app.client_id, redirect_uri: REDIRECT_URI, code_verifier: flow.verifier };
      const tokens = await t.form('/tool/home/oauth/token', fields);
      expect(tokens.status, tokens.text).toBe(200);
      expect(tokens.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'profile:read' });
      expect(tokens.body.access_token).toMatch(/^toa_/);
      const userinfo = await t.request('GET', '/oauth/userinfo', { token: tokens.body.access_token });
      expect(userinfo.status).toBe(200);

      const rotated = await rtoken({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: app.client_id }, tokens.body.access_token);
      expect(rotated.status, rotated.text).toBe(200);
      expect(rotated.body.refresh_token).toMatch(/^tor_/);
      expect((await t.request('GET', '/oauth/userinfo', { token: tokens.body.access_token })).status).toBe(401);
      expect((await t.request('GET', '/oauth/userinfo', { token: rotated.body.access_token })).status).toBe(200);
      // A used code answers invalid_grant and, as on /oauth/token, ends the grant's tokens.
      const reused = await t.form('/tool/home/oauth/token', fields);
      expect([reused.status, oauthError(reused)]).toEqual([400, 'invalid_grant']);
      expect(oauthError(await t.form('/tool/home/oauth/token', { ...fields, grant_type: 'refresh_token' }))).toBe('unsupported_grant_type');
      expect(oauthError(await t.form('/tool/home/oauth/token', { code, client_id: app.client_id }))).toBe('invalid_request');
      expect((await t.request('GET', '/oauth/userinfo', { token: rotated.body.access_token })).status).toBe(401);
    });

    it('upgrades an anonymous user to a registered one without losing its data', async () => {
      const id = identifier();
      const anon = (await signIn(id)).body;
      const record = await t.request('POST', '/tool/vdb/Notes', { token: anon.access_token, body: { content: 'written while anonymous' } });
      expect(record.status).toBe(201);
      const email = `upgraded-${id}@example.com`;
      const upgraded = await t.request('POST', '/tool/home/oauth/upgrade', { token: anon.access_token, body: { email, password: 'correct horse battery' } });
      expect(upgraded.status, upgraded.text).toBe(200);
      expect(upgraded.body.user).toMatchObject({ id: anon.user_id, email });
      const login = await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } });
      expect(login.status).toBe(200);
      const read = await t.request('GET', `/tool/vdb/Notes/${record.body.id}`, { token: login.body.token });
      expect([read.status, read.body.content]).toEqual([200, 'written while anonymous']);
      expect(await canUse(anon.access_token)).toBe(401);
      const signInAgain = await signIn(id);
      expect([signInAgain.status, signInAgain.body.error]).toEqual([403, 'anonymous_account_upgraded']);
      const notAnonymous = await t.request('POST', '/tool/home/oauth/upgrade', { token: login.body.token, body: { email: 'x@example.com', password: 'correct horse battery' } });
      expect(notAnonymous.status).toBe(403);
      const taken = (await signIn(identifier())).body;
      const conflict = await t.request('POST', '/tool/home/oauth/upgrade', { token: taken.access_token, body: { email, password: 'correct horse battery' } });
      expect([conflict.status, conflict.body.error]).toEqual([409, 'email_taken']);
      // The failed upgrade changed nothing: the anonymous user still works.
      expect(await canUse(taken.access_token)).toBe(201);
    });

    it('rate limits sign-in attempts per identifier', async () => {
      const id = identifier();
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await signIn(id, i === 0 ? 'a long secret' : 'wrong password!')).status);
      expect(statuses.slice(0, 5)).toEqual([200, 401, 401, 401, 401]);
      const limited = await signIn(id);
      expect([limited.status, limited.body.error]).toEqual([429, 'rate_limited']);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });
});
