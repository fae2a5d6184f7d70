import { identityModule, oauthModule, systemModule, UserService, type AdapterBinding, type TrellisConfigInput, type TrellisModule } from '@trellis/core';
import { startTestHost, type TestDatabase, type TestHost, type TestResponse, type TransportName } from '@trellis/test-support';
import * as oauth from 'oauth4webapi';
import { expect } from 'vitest';

/** The modules the OAuth suites need; other areas stay out so their state cannot interfere. */
export const oauthModules = [systemModule, identityModule, oauthModule];

/** A loopback redirect URI (RFC 8252 §7.3); nothing listens there, the tests read the Location. */
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** Generous limits, so only the rate-limit tests meet them. */
export const relaxedLimits = { rateLimit: { perIp: 100_000, perClient: 100_000 } };

export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export interface OAuthTestHost extends TestHost {
  adminToken: string;
  /** POST with an application/x-www-form-urlencoded body. */
  form<T = any>(path: string, fields: Record<string, string>, headers?: Record<string, string>): Promise<TestResponse<T>>;
  createApp(body?: Record<string, unknown>): Promise<AdminApp>;
}

export interface AdminApp {
  id: string;
  client_id: string;
  name: string;
  redirect_uris: string[];
  scopes: string[];
  status: string;
}

export async function startOAuthHost(
  db: TestDatabase,
  transport: TransportName,
  config: TrellisConfigInput = {},
  extra: { adapters?: readonly AdapterBinding[]; modules?: readonly TrellisModule[] } = {},
): Promise<OAuthTestHost> {
  const oauthSection = (config as { oauth?: Record<string, unknown> }).oauth ?? {};
  const t = await startTestHost(db, transport, {
    modules: [...oauthModules, ...(extra.modules ?? [])],
    adapters: extra.adapters,
    config: { ...config, oauth: { ...relaxedLimits, ...oauthSection } },
  });
  const admin = await t.register();
  await t.kernel.get(UserService).update(t.kernel.fork(), admin.userId, { isSiteAdmin: true });
  const form: OAuthTestHost['form'] = (path, fields, headers = {}) =>
    t.request('POST', path, { raw: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  const createApp: OAuthTestHost['createApp'] = async (body = {}) => {
    const r = await t.request('POST', '/admin/oauth-apps', {
      token: admin.token,
      body: { name: 'Test app', description: 'An app under test', redirect_uris: [REDIRECT_URI], scopes: ['profile:read', 'chat:completions'], ...body },
    });
    if (r.status !== 201) throw new Error(`creating an app failed: ${r.status} ${r.text}`);
    return r.body;
  };
  return Object.assign(t, { adminToken: admin.token, form, createApp });
}

export interface Pkce {
  verifier: string;
  challenge: string;
  state: string;
}

export async function pkce(): Promise<Pkce> {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier), state: oauth.generateRandomState() };
}

/** Query string of a valid authorization request for `app`, with overrides (undefined removes a parameter). */
export function authorizeQuery(app: AdminApp, p: Pkce, overrides: Record<string, string | undefined> = {}): string {
  const params: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: app.client_id,
    redirect_uri: app.redirect_uris[0],
    scope: 'profile:read',
    state: p.state,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    ...overrides,
  };
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value);
  return query.toString();
}

/**
 * Runs the browser part of the flow: GET /oauth/authorize (which must redirect to the consent
 * page), then POST /oauth/authorize as the signed-in user. Answers the redirect with the code.
 */
export async function authorize(t: OAuthTestHost, app: AdminApp, userToken: string, overrides: Record<string, string | undefined> = {}): Promise<Pkce & { redirectTo: string }> {
  const p = await pkce();
  const start = await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p, overrides)}`);
  expect(start.status, start.text).toBe(302);
  const consent = new URL(start.headers.get('location')!);
  expect(consent.pathname).toBe('/oauth/consent');
  const body: Record<string, string> = {};
  for (const name of ['client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method']) {
    const value = consent.searchParams.get(name);
    if (value !== null) body[name] = value;
  }
  const confirmed = await t.request('POST', '/oauth/authorize', { token: userToken, body });
  expect(confirmed.status, confirmed.text).toBe(200);
  return { ...p, redirectTo: confirmed.body.redirectTo };
}

/** Discovery through oauth4webapi (RFC 8414), the issuer being the host's URL. */
export async function discover(t: TestHost): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(t.url);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
}

/** The code of an authorization redirect, validated by oauth4webapi, exchanged for tokens. */
export async function exchange(as: oauth.AuthorizationServer, app: AdminApp, flow: Pkce & { redirectTo: string }): Promise<oauth.TokenEndpointResponse> {
  const client: oauth.Client = { client_id: app.client_id };
  const params = oauth.validateAuthResponse(as, client, new URL(flow.redirectTo), flow.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, app.redirect_uris[0]!, flow.verifier, insecure);
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

/** The `error` of an OAuth error body, asserting the body has only the RFC's fields. */
export function oauthError(r: TestResponse): string {
  expect(Object.keys(r.body).sort(), r.text).toEqual(['error', 'error_description']);
  // RFC 6749 §5.2: error_description uses %x20-21 / %x23-5B / %x5D-7E only.
  expect(r.body.error_description).toMatch(/^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/);
  return r.body.error;
}

/** The error parameters of a redirect back to the client. */
export function redirectedError(r: TestResponse): URLSearchParams {
  expect(r.status, r.text).toBe(302);
  const location = r.headers.get('location')!;
  expect(location.startsWith(`${REDIRECT_URI}?`), location).toBe(true);
  const params = new URL(location).searchParams;
  expect(params.get('error_description') ?? '').toMatch(/^[\x20-\x21\x23-\x5B\x5D-\x7E]*$/);
  return params;
}
