import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthAuditService, OAuthToken, sha256Hex as sha256 } from '@trellis/core';
import { testDatabases, transports } from '@trellis/test-support';
import { authorize, discover, exchange, insecure, oauthError, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

// The whole flow driven by an independent client library, oauth4webapi: discovery, authorization
// with PKCE, code exchange, userinfo, refresh rotation, reuse detection and revocation.
describe.each(testDatabases())('OAuth flow on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let app: AdminApp;
    let as: oauth.AuthorizationServer;
    let client: oauth.Client;

    beforeAll(async () => {
      t = await startOAuthHost(db, transport);
      app = await t.createApp();
      as = await discover(t);
      client = { client_id: app.client_id };
    });
    afterAll(() => t?.close());

    it('publishes RFC 8414 metadata that matches the issuer', () => {
      expect(as.issuer).toBe(t.url);
      expect(as.authorization_endpoint).toBe(`${t.url}/oauth/authorize`);
      expect(as.token_endpoint).toBe(`${t.url}/oauth/token`);
      expect(as.revocation_endpoint).toBe(`${t.url}/oauth/revoke`);
      expect(as.userinfo_endpoint).toBe(`${t.url}/oauth/userinfo`);
      expect(as.code_challenge_methods_supported).toEqual(['S256']);
      expect(as.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
      expect(as.authorization_response_iss_parameter_supported).toBe(true);
    });

    it('runs authorization with PKCE, code exchange, userinfo, rotation, reuse detection and revocation', async () => {
      const user = await t.register();
      const flow = await authorize(t, app, user.token);
      const tokens = await exchange(as, app, flow);
      expect(tokens.token_type).toBe('bearer');
      expect(tokens.access_token).toMatch(/^toa_[A-Za-z0-9_-]{43}$/);
      expect(tokens.refresh_token).toMatch(/^tor_[A-Za-z0-9_-]{43}$/);
      expect(tokens.expires_in).toBe(3600);
      expect(tokens.scope).toBe('profile:read');

      // userinfo
      const info = await oauth.processUserInfoResponse(as, client, user.userId, await oauth.userInfoRequest(as, client, tokens.access_token, insecure));
      expect(info).toEqual({
        sub: user.userId,
        email: user.email,
        name: expect.any(String),
        avatar_url: null,
        scope: 'profile:read',
        is_site_admin: false,
        is_real_team_admin: false,
      });

      // rotation: a new pair in the same family; the old refresh token is now spent
      const rotated = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
      expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
      expect(rotated.access_token).not.toBe(tokens.access_token);
      const [oldRow, newRow] = await Promise.all(
        [tokens.refresh_token!, rotated.refresh_token!].map((token) => t.kernel.fork().findOneOrFail(OAuthToken, { tokenHash: sha256(token) })),
      );
      expect(oldRow!.revokedReason).toBe('rotated');
      expect(oldRow!.revokedAt).toBeInstanceOf(Date);
      expect(newRow!.tokenFamily.id).toBe(oldRow!.tokenFamily.id);
      await oauth.processUserInfoResponse(as, client, user.userId, await oauth.userInfoRequest(as, client, rotated.access_token, insecure));

      // reuse of the rotated token: invalid_grant, and the whole family is revoked
      const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
      const reuseError = await oauth.processRefreshTokenResponse(as, client, reuse).catch((error: unknown) => error);
      expect(reuseError).toBeInstanceOf(oauth.ResponseBodyError);
      expect((reuseError as oauth.ResponseBodyError).error).toBe('invalid_grant');
      const after = await oauth.userInfoRequest(as, client, rotated.access_token, insecure);
      expect(after.status).toBe(401);
      expect(after.headers.get('www-authenticate')).toMatch(/^Bearer realm="trellis", error="invalid_token"/);
      expect(oauthError({ status: after.status, headers: after.headers, body: await after.json(), text: '' })).toBe('invalid_token');
      // ... and so is the newest refresh token: the client must sign in again
      const latest = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), rotated.refresh_token!, insecure);
      await expect(oauth.processRefreshTokenResponse(as, client, latest)).rejects.toMatchObject({ error: 'invalid_grant' });
      // the event is recorded
      const events = await t.kernel.get(OAuthAuditService).list({ clientId: app.client_id });
      expect(events.some((e) => e.type === 'refresh_token_reuse' && e.userId === user.userId && e.tokenFamilyId === oldRow!.tokenFamily.id)).toBe(true);

      // revocation (RFC 7009) of a fresh grant: revoking the refresh token ends its access token too
      const second = await exchange(as, app, await authorize(t, app, user.token));
      await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), second.refresh_token!, insecure));
      expect((await oauth.userInfoRequest(as, client, second.access_token, insecure)).status).toBe(401);
      const afterRevoke = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), second.refresh_token!, insecure);
      await expect(oauth.processRefreshTokenResponse(as, client, afterRevoke)).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    it('revokes an access token alone, and accepts revocation of unknown tokens with 200 {}', async () => {
      const user = await t.register();
      const tokens = await exchange(as, app, await authorize(t, app, user.token));
      await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), tokens.access_token, { ...insecure, additionalParameters: { token_type_hint: 'access_token' } }));
      expect((await oauth.userInfoRequest(as, client, tokens.access_token, insecure)).status).toBe(401);
      // the refresh token of that grant still works
      const rotated = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
      expect(rotated.access_token).toMatch(/^toa_/);
      for (const token of ['toa_unknown', 'tor_unknown', 'something-else', tokens.access_token]) {
        const r = await t.form('/oauth/revoke', { token, token_type_hint: 'refresh_token' });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({});
      }
    });

    it('refuses a reused authorization code and revokes what the first exchange issued', async () => {
      const user = await t.register();
      const flow = await authorize(t, app, user.token);
      const tokens = await exchange(as, app, flow);
      const again = await exchange(as, app, flow).catch((error: unknown) => error);
      expect(again).toBeInstanceOf(oauth.ResponseBodyError);
      expect((again as oauth.ResponseBodyError).error).toBe('invalid_grant');
      expect((await oauth.userInfoRequest(as, client, tokens.access_token, insecure)).status).toBe(401);
      const refresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
      await expect(oauth.processRefreshTokenResponse(as, client, refresh)).rejects.toMatchObject({ error: 'invalid_grant' });
      const events = await t.kernel.get(OAuthAuditService).list({ clientId: app.client_id });
      expect(events.some((e) => e.type === 'authorization_code_reuse' && e.userId === user.userId)).toBe(true);
    });

    it('lets exactly one of two parallel refreshes with the same token succeed, then revokes the family', async () => {
      const user = await t.register();
      for (let round = 0; round < 5; round++) {
        const tokens = await exchange(as, app, await authorize(t, app, user.token));
        const body = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: app.client_id };
        const results = await Promise.all([t.form('/oauth/token', body), t.form('/oauth/token', body)]);
        expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
        const loser = results.find((r) => r.status === 400)!;
        expect(oauthError(loser)).toBe('invalid_grant');
        const winner = results.find((r) => r.status === 200)!;
        // the loser's request was reuse: the winner's tokens are revoked with the family
        expect((await t.request('GET', '/oauth/userinfo', { token: winner.body.access_token })).status).toBe(401);
        expect((await t.form('/oauth/token', { ...body, refresh_token: winner.body.refresh_token })).status).toBe(400);
      }
    });

    it('lets exactly one of two parallel exchanges of the same code succeed', async () => {
      const user = await t.register();
      for (let round = 0; round < 5; round++) {
        const flow = await authorize(t, app, user.token);
        const body = {
          grant_type: 'authorization_code',
          code: new URL(flow.redirectTo).searchParams.get('code')!,
          client_id: app.client_id,
          redirect_uri: app.redirect_uris[0]!,
          code_verifier: flow.verifier,
        };
        const results = await Promise.all([t.form('/oauth/token', body), t.form('/oauth/token', body)]);
        expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
        expect(oauthError(results.find((r) => r.status === 400)!)).toBe('invalid_grant');
        // a second use revokes what the first issued
        expect((await t.request('GET', '/oauth/userinfo', { token: results.find((r) => r.status === 200)!.body.access_token })).status).toBe(401);
      }
    });

    it('answers a second use of a refresh token like any invalid token (no oracle)', async () => {
      const user = await t.register();
      const tokens = await exchange(as, app, await authorize(t, app, user.token));
      const body = { grant_type: 'refresh_token', client_id: app.client_id };
      await t.form('/oauth/token', { ...body, refresh_token: tokens.refresh_token! });
      const reused = await t.form('/oauth/token', { ...body, refresh_token: tokens.refresh_token! });
      const unknown = await t.form('/oauth/token', { ...body, refresh_token: 'tor_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
      const garbage = await t.form('/oauth/token', { ...body, refresh_token: 'garbage' });
      for (const r of [reused, unknown, garbage]) expect(r.status).toBe(400);
      expect(reused.body).toEqual(unknown.body);
      expect(garbage.body).toEqual(unknown.body);
    });
  });
});
