import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockServiceIdentifier, defineModule, defineRoute, ManualClock, OAuthToken, provide, sha256Hex, UserService } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { authorize, discover, exchange, oauthError, REDIRECT_URI, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

/** A route that accepts OAuth tokens without listing scopes: only full-access scopes pass. */
const probeModule = defineModule({
  name: 'oauth-probe',
  routes: [
    defineRoute({ method: 'GET', path: '/probe/any', auth: ['jwt', 'oauth'], handler: (ctx) => ({ kind: ctx.requirePrincipal().kind }) }),
    defineRoute({ method: 'GET', path: '/probe/chat', auth: ['oauth'], scopes: ['chat:completions'], handler: () => ({ ok: true }) }),
  ],
});

// The token, revocation and userinfo endpoints rule by rule, each asserting the exact error code,
// and the scopes OAuth tokens carry into other routes.
describe.each(testDatabases())('OAuth token endpoint on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let app: AdminApp;
    let as: oauth.AuthorizationServer;
    const clock = new ManualClock();

    beforeAll(async () => {
      t = await startOAuthHost(
        db,
        transport,
        { oauth: { mobileClientIds: { production: 'trellis-android' } }, auth: { principalCacheTtlMs: 0 } },
        { adapters: [provide(clockServiceIdentifier, clock)], modules: [probeModule] },
      );
      app = await t.createApp();
      as = await discover(t);
    });
    afterAll(() => t?.close());

    const codeFor = async (userToken: string, target = app) => {
      const flow = await authorize(t, target, userToken);
      return { ...flow, code: new URL(flow.redirectTo).searchParams.get('code')! };
    };
    const tokensFor = async (userToken: string, target = app, scope?: string) => {
      const flow = await authorize(t, target, userToken, scope ? { scope } : {});
      return exchange(as, target, flow);
    };

    describe('request shape', () => {
      it('takes only form-encoded bodies (charset accepted); JSON is refused with invalid_request', async () => {
        const json = await t.request('POST', '/oauth/token', { body: { grant_type: 'refresh_token' } });
        expect(json.status).toBe(415);
        expect(oauthError(json)).toBe('invalid_request');
        const withCharset = await t.form('/oauth/token', { grant_type: 'refresh_token', client_id: app.client_id }, { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' });
        expect(withCharset.status).toBe(400);
        expect(oauthError(withCharset)).toBe('invalid_request'); // parsed: refresh_token is what is missing
        expect(withCharset.body.error_description).toMatch(/refresh_token/);
      });

      it('grant_type missing: invalid_request; unknown: unsupported_grant_type', async () => {
        expect(oauthError(await t.form('/oauth/token', { client_id: app.client_id }))).toBe('invalid_request');
        for (const grant_type of ['password', 'client_credentials', 'implicit', 'toString', '__proto__']) {
          const r = await t.form('/oauth/token', { grant_type, client_id: app.client_id });
          expect(r.status).toBe(400);
          expect(oauthError(r)).toBe('unsupported_grant_type');
        }
      });

      it('client_id missing: invalid_request; unknown: invalid_client', async () => {
        expect(oauthError(await t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: 'tor_x' }))).toBe('invalid_request');
        const unknown = await t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: 'tor_x', client_id: 'nobody' });
        expect(unknown.status).toBe(400);
        expect(oauthError(unknown)).toBe('invalid_client');
      });

      it('sends Cache-Control: no-store and Pragma: no-cache, and allows every origin', async () => {
        const user = await t.register();
        const { code, verifier } = await codeFor(user.token);
        const ok = await t.form(
          '/oauth/token',
          { grant_type: 'authorization_code', code, client_id: app.client_id, redirect_uri: REDIRECT_URI, code_verifier: verifier },
          { origin: 'https://anywhere.example' },
        );
        expect(ok.status).toBe(200);
        expect(ok.headers.get('cache-control')).toBe('no-store');
        expect(ok.headers.get('pragma')).toBe('no-cache');
        expect(ok.headers.get('access-control-allow-origin')).toBe('*');
        expect(Object.keys(ok.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
        expect(ok.body.token_type).toBe('Bearer');
        const failed = await t.form('/oauth/token', { grant_type: 'nope' }, { origin: 'https://anywhere.example' });
        expect(failed.headers.get('cache-control')).toBe('no-store');
        expect(failed.headers.get('access-control-allow-origin')).toBe('*');
        const preflight = await t.request('OPTIONS', '/oauth/token', { headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' } });
        expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
      });
    });

    describe('grant_type=authorization_code', () => {
      let user: { token: string; userId: string };
      beforeAll(async () => {
        user = await t.register();
      });
      const grant = (fields: Record<string, string | undefined>) => {
        const body: Record<string, string> = {};
        for (const [k, v] of Object.entries({ grant_type: 'authorization_code', client_id: app.client_id, redirect_uri: REDIRECT_URI, ...fields })) if (v !== undefined) body[k] = v;
        return t.form('/oauth/token', body);
      };

      it('code, redirect_uri or code_verifier missing: invalid_request', async () => {
        const { code, verifier } = await codeFor(user.token);
        expect(oauthError(await grant({ code_verifier: verifier }))).toBe('invalid_request');
        expect(oauthError(await grant({ code, code_verifier: verifier, redirect_uri: undefined }))).toBe('invalid_request');
        expect(oauthError(await grant({ code }))).toBe('invalid_request');
        expect(oauthError(await grant({ code, code_verifier: '' }))).toBe('invalid_request');
      });

      it('code_verifier shorter than 43, longer than 128, or outside A-Z a-z 0-9 - . _ ~: invalid_request', async () => {
        const { code } = await codeFor(user.token);
        for (const code_verifier of ['a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`, `${'a'.repeat(42)}/`, `${'a'.repeat(42)}=`]) {
          const r = await grant({ code, code_verifier });
          expect(r.status, code_verifier).toBe(400);
          expect(oauthError(r)).toBe('invalid_request');
        }
      });

      it('unknown code, wrong verifier, other redirect_uri, other client: invalid_grant', async () => {
        const { code, verifier } = await codeFor(user.token);
        const other = await t.createApp();
        expect(oauthError(await grant({ code: 'not-a-code', code_verifier: verifier }))).toBe('invalid_grant');
        expect(oauthError(await grant({ code, code_verifier: (await oauth.generateRandomCodeVerifier()) }))).toBe('invalid_grant');
        expect(oauthError(await grant({ code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:9/other' }))).toBe('invalid_grant');
        expect(oauthError(await grant({ code, code_verifier: verifier, client_id: other.client_id }))).toBe('invalid_grant');
        // none of these failures used the code up
        expect((await grant({ code, code_verifier: verifier })).status).toBe(200);
      });

      it('an expired code: invalid_grant (lifetime oauth.authorizationCodeTtlSeconds, default 60 s)', async () => {
        const { code, verifier } = await codeFor(user.token);
        clock.advance(61_000);
        expect(oauthError(await grant({ code, code_verifier: verifier }))).toBe('invalid_grant');
      });

      it('a code issued before the app\'s redirect URIs changed: invalid_grant', async () => {
        const target = await t.createApp();
        const { code, verifier } = await codeFor(user.token, target);
        await t.request('PATCH', `/admin/oauth-apps/${target.id}`, { token: t.adminToken, body: { redirect_uris: [REDIRECT_URI, 'https://new.example/cb'] } });
        expect(oauthError(await grant({ code, code_verifier: verifier, client_id: target.client_id }))).toBe('invalid_grant');
      });

      it('a code of a user disabled since: invalid_grant', async () => {
        const someone = await t.register();
        const { code, verifier } = await codeFor(someone.token);
        await t.kernel.get(UserService).update(t.kernel.fork(), someone.userId, { status: 'disabled' });
        expect(oauthError(await grant({ code, code_verifier: verifier }))).toBe('invalid_grant');
      });

      it('issues access tokens with the configured lifetime and the granted scope', async () => {
        const tokens = await tokensFor(user.token, app, 'profile:read chat:completions');
        expect(tokens.expires_in).toBe(3600);
        expect(tokens.scope).toBe('profile:read chat:completions');
        const row = await t.kernel.fork().findOneOrFail(OAuthToken, { tokenHash: sha256Hex(tokens.access_token) });
        expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(3600_000);
      });
    });

    describe('grant_type=refresh_token', () => {
      let user: { token: string; userId: string };
      beforeAll(async () => {
        user = await t.register();
      });
      const refresh = (refresh_token: string | undefined, extra: Record<string, string> = {}) => {
        const body: Record<string, string> = { grant_type: 'refresh_token', client_id: app.client_id, ...extra };
        if (refresh_token !== undefined) body['refresh_token'] = refresh_token;
        return t.form('/oauth/token', body);
      };

      it('refresh_token missing: invalid_request', async () => {
        expect(oauthError(await refresh(undefined))).toBe('invalid_request');
        expect(oauthError(await refresh(''))).toBe('invalid_request');
      });

      it('a refresh token of another client: invalid_grant, and it stays usable by its own client', async () => {
        const tokens = await tokensFor(user.token);
        const other = await t.createApp();
        const r = await refresh(tokens.refresh_token!, { client_id: other.client_id });
        expect(oauthError(r)).toBe('invalid_grant');
        expect((await refresh(tokens.refresh_token!)).status).toBe(200);
      });

      it('an access token presented as refresh token: invalid_grant', async () => {
        const tokens = await tokensFor(user.token);
        expect(oauthError(await refresh(tokens.access_token))).toBe('invalid_grant');
      });

      it('an expired refresh token: invalid_grant (default lifetime 30 days)', async () => {
        const tokens = await tokensFor(user.token);
        clock.advance(30 * 86_400_000 + 1000);
        expect(oauthError(await refresh(tokens.refresh_token!))).toBe('invalid_grant');
      });

      it('may narrow the scope but not widen it (invalid_scope)', async () => {
        const tokens = await tokensFor(user.token, app, 'profile:read chat:completions');
        const narrowed = await refresh(tokens.refresh_token!, { scope: 'profile:read' });
        expect(narrowed.status).toBe(200);
        expect(narrowed.body.scope).toBe('profile:read');
        // the grant itself keeps both scopes
        const back = await refresh(narrowed.body.refresh_token);
        expect(back.body.scope).toBe('profile:read chat:completions');
        const widened = await refresh(back.body.refresh_token, { scope: 'profile:read mobile:full' });
        expect(oauthError(widened)).toBe('invalid_scope');
      });

      it('an access token expires after expires_in: 401 invalid_token', async () => {
        const tokens = await tokensFor(user.token);
        expect((await t.request('GET', '/oauth/userinfo', { token: tokens.access_token })).status).toBe(200);
        clock.advance(3601_000);
        const r = await t.request('GET', '/oauth/userinfo', { token: tokens.access_token });
        expect(r.status).toBe(401);
        expect(oauthError(r)).toBe('invalid_token');
      });
    });

    describe('POST /oauth/revoke', () => {
      it('token missing: 200 {} as well (the spec: always 200)', async () => {
        const r = await t.form('/oauth/revoke', { token_type_hint: 'access_token' });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({});
      });

      it('answers 200 {} as JSON for valid, unknown and malformed tokens and any hint, from any origin', async () => {
        for (const fields of [{ token: 'tor_nothing' }, { token: 'x', token_type_hint: 'bogus' }, { token: 'toa_y', token_type_hint: 'refresh_token' }] as Array<Record<string, string>>) {
          const r = await t.form('/oauth/revoke', fields, { origin: 'https://anywhere.example' });
          expect(r.status).toBe(200);
          expect(r.headers.get('content-type')).toMatch(/^application\/json/);
          expect(r.body).toEqual({});
          expect(r.headers.get('access-control-allow-origin')).toBe('*');
        }
      });

      it('leaves a token alone when client_id names another client, and still answers 200', async () => {
        const user = await t.register();
        const tokens = await tokensFor(user.token);
        const other = await t.createApp();
        const r = await t.form('/oauth/revoke', { token: tokens.access_token, client_id: other.client_id });
        expect(r.status).toBe(200);
        expect((await t.request('GET', '/oauth/userinfo', { token: tokens.access_token })).status).toBe(200);
        await t.form('/oauth/revoke', { token: tokens.access_token, client_id: app.client_id });
        expect((await t.request('GET', '/oauth/userinfo', { token: tokens.access_token })).status).toBe(401);
      });
    });

    describe('GET /oauth/userinfo', () => {
      it('without a token: 401 invalid_token with a bare Bearer challenge (RFC 6750 §3.1)', async () => {
        const r = await t.request('GET', '/oauth/userinfo', { headers: { origin: 'https://anywhere.example' } });
        expect(r.status).toBe(401);
        expect(oauthError(r)).toBe('invalid_token');
        expect(r.headers.get('www-authenticate')).toBe('Bearer realm="trellis"');
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
      });

      it('with an unknown, malformed or non-OAuth token: 401 invalid_token with an error challenge', async () => {
        const user = await t.register();
        for (const token of ['toa_unknown', 'garbage', user.token]) {
          const r = await t.request('GET', '/oauth/userinfo', { token });
          expect(r.status, token).toBe(401);
          expect(oauthError(r)).toBe('invalid_token');
          expect(r.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
        }
      });

      it('with a token lacking profile:read: 403 insufficient_scope', async () => {
        const user = await t.register();
        const tokens = await tokensFor(user.token, app, 'chat:completions');
        const r = await t.request('GET', '/oauth/userinfo', { token: tokens.access_token });
        expect(r.status).toBe(403);
        expect(oauthError(r)).toBe('insufficient_scope');
        expect(r.headers.get('www-authenticate')).toMatch(/error="insufficient_scope", scope="profile:read/);
      });

      it('is_real_team_admin: true only as owner or admin of a team with 2 or more members', async () => {
        const alice = await t.register();
        const bob = await t.register();
        const carol = await t.register();
        const info = async (who: { token: string }) => (await t.request('GET', '/oauth/userinfo', { token: (await tokensFor(who.token)).access_token })).body;
        expect((await info(alice)).is_real_team_admin).toBe(false); // personal team only
        const team = await t.request('POST', '/teams', { token: alice.token, body: { name: 'Solo' } });
        expect((await info(alice)).is_real_team_admin).toBe(false); // a team of one
        const bobEmail = (await t.request('GET', '/auth/me', { token: bob.token })).body.user.email;
        const carolEmail = (await t.request('GET', '/auth/me', { token: carol.token })).body.user.email;
        await t.request('POST', `/teams/${team.body.id}/members`, { token: alice.token, body: { email: bobEmail, role: 'member' } });
        expect((await info(alice)).is_real_team_admin).toBe(true); // owner of a team of two
        expect((await info(bob)).is_real_team_admin).toBe(false); // plain member
        await t.request('POST', `/teams/${team.body.id}/members`, { token: alice.token, body: { email: carolEmail, role: 'admin' } });
        expect((await info(carol)).is_real_team_admin).toBe(true); // admin of a team of three
      });

      it('keeps last_used_at, last_used_ip and last_used_user_agent current, writing at most once a minute', async () => {
        const user = await t.register();
        const tokens = await tokensFor(user.token);
        const row = async () => t.kernel.fork().findOneOrFail(OAuthToken, { tokenHash: sha256Hex(tokens.access_token) });
        const settled = async (check: (r: OAuthToken) => boolean) => {
          for (let i = 0; i < 50; i++) {
            const r = await row();
            if (check(r)) return r;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          return row();
        };
        expect((await row()).lastUsedAt).toBeNull();
        await t.request('GET', '/oauth/userinfo', { token: tokens.access_token, headers: { 'user-agent': 'first-agent/1.0' } });
        const first = await settled((r) => r.lastUsedAt !== null);
        expect(first.lastUsedAt!.getTime()).toBe(clock.nowMs());
        expect(first.lastUsedIp).toMatch(/127\.0\.0\.1/);
        expect(first.lastUsedUserAgent).toBe('first-agent/1.0');
        clock.advance(30_000);
        await t.request('GET', '/oauth/userinfo', { token: tokens.access_token, headers: { 'user-agent': 'second-agent/1.0' } });
        // within the interval nothing is written
        expect((await row()).lastUsedUserAgent).toBe('first-agent/1.0');
        clock.advance(31_000);
        await t.request('GET', '/oauth/userinfo', { token: tokens.access_token, headers: { 'user-agent': 'third-agent/1.0' } });
        const third = await settled((r) => r.lastUsedUserAgent === 'third-agent/1.0');
        expect(third.lastUsedUserAgent).toBe('third-agent/1.0');
        expect(third.lastUsedAt!.getTime()).toBe(clock.nowMs());
      });
    });

    describe('scopes of OAuth tokens on other routes', () => {
      it('profile:read reaches /auth/me; a token without it gets 403 insufficient_scope', async () => {
        const user = await t.register();
        const reader = await tokensFor(user.token, app, 'profile:read');
        const me = await t.request('GET', '/auth/me', { token: reader.access_token });
        expect(me.status).toBe(200);
        expect(me.body.credential).toEqual({ kind: 'oauth', scopes: ['profile:read'] });
        const chat = await tokensFor(user.token, app, 'chat:completions');
        const refused = await t.request('GET', '/auth/me', { token: chat.access_token });
        expect(refused.status).toBe(403);
        expect(refused.body.error).toBe('insufficient_scope');
        expect(refused.headers.get('www-authenticate')).toMatch(/insufficient_scope/);
      });

      it('a route without a scope list takes JWTs and full-access (mobile:full) tokens only', async () => {
        const user = await t.register();
        const mobile = await t.createApp({ client_id: 'trellis-android', scopes: ['mobile:full'], redirect_uris: ['com.example.trellis:/cb'] });
        const full = await tokensFor(user.token, mobile, 'mobile:full');
        const partial = await tokensFor(user.token, app, 'profile:read chat:completions');
        expect((await t.request('GET', '/probe/any', { token: user.token })).body).toEqual({ kind: 'jwt' });
        expect((await t.request('GET', '/probe/any', { token: full.access_token })).body).toEqual({ kind: 'oauth' });
        expect((await t.request('GET', '/auth/me', { token: full.access_token })).status).toBe(200);
        const refused = await t.request('GET', '/probe/any', { token: partial.access_token });
        expect(refused.status).toBe(403);
        expect(refused.body.error).toBe('insufficient_scope');
        expect((await t.request('GET', '/probe/chat', { token: partial.access_token })).status).toBe(200);
        expect((await t.request('GET', '/probe/chat', { token: full.access_token })).status).toBe(200);
      });

      it('OAuth tokens are refused where the route does not accept the oauth kind', async () => {
        const user = await t.register();
        const tokens = await tokensFor(user.token);
        const r = await t.request('GET', '/auth/api-keys', { token: tokens.access_token });
        expect(r.status).toBe(403);
        expect(r.body.error).toBe('credential_not_allowed');
      });
    });
  });
});
