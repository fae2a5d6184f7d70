import type { TrellisConfig } from '../../../kernel/config/config.js';
import { Reply } from '../../../kernel/http/reply.js';
import { allCredentialKinds } from '../../../kernel/auth/principal.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../../kernel/http/route.js';
import { configServiceIdentifier, kernelServiceIdentifier } from '../../../kernel/tokens.js';
import { newAuthorizationRequest, type AuthorizationParams } from '../checks/authorize/index.js';
import type { TokenParams } from '../checks/token/index.js';
import { AuthorizeBody, AuthorizeQuery, present, RevokeBody, TokenBody } from '../dto/protocol.dto.js';
import { InvalidClient, InvalidToken, isOAuthError } from '../oauth-errors.js';
import { emptyObjectSchema, redirectToSchema, tokenResponseSchema, userInfoSchema } from '../schemas.js';
import { issuerOf, withQuery } from '../services/issuer.js';
import { OAuthAuthorizationService } from '../services/oauth-authorization.service.js';
import { OAuthRateLimiter } from '../services/oauth-rate-limiter.js';
import { OAuthTokenService } from '../services/oauth-token.service.js';
import { OAuthUserInfoService } from '../services/oauth-userinfo.service.js';

const tags = ['OAuth'];
const protocol = {
  errorFormat: 'oauth',
  validationError: { status: 400, code: 'invalid_request' },
  unknownFields: 'ignore',
} as const;
/** RFC 6749 §5.1: responses with tokens or codes are never cached. */
const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' };

/** Copies the named parameters, treating empty values as omitted (RFC 6749 §3.1, §3.2). */
function paramsOf<K extends string>(source: object, names: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const name of names) {
    const value = present((source as Record<string, string | undefined>)[name]);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

const authorizationNames = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'prompt', 'login_hint', 'display'] as const;
const tokenNames = ['grant_type', 'client_id', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope'] as const;

const configOf = (ctx: RequestContext): TrellisConfig => ctx.get(configServiceIdentifier);

const authorize = defineRoute({
  method: 'GET',
  path: '/oauth/authorize',
  summary: 'Start an authorization (Authorization Code with PKCE S256)',
  description:
    'Validates the request with the checks of RFC 6749 §4.1.1, RFC 7636 and the spec, in order. Success: 302 to `{frontend_url}/oauth/consent` ' +
    '(or the built-in page) with client_id, redirect_uri, scope, state, code_challenge, code_challenge_method and, when given, prompt, login_hint, display. ' +
    'An unknown client or an unregistered redirect_uri: 400 `{error, error_description}`. Any later error, and prompt=none (`interaction_required`), ' +
    'is a 302 back to redirect_uri with error, error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207).',
  tags,
  auth: 'none',
  query: AuthorizeQuery,
  ...protocol,
  response: { status: 302, description: 'Redirect to the consent page, or an error redirect to the client' },
  errors: { 400: 'Unknown client or unregistered redirect_uri (invalid_client, invalid_request)', 429: 'Rate limited (temporarily_unavailable)' },
  async handler(ctx) {
    const params: AuthorizationParams = paramsOf(ctx.query, authorizationNames);
    await ctx.get(OAuthRateLimiter).check('authorize', ctx.ip, params.client_id);
    const config = configOf(ctx);
    const issuer = issuerOf(config, ctx.get(kernelServiceIdentifier).servedUrl);
    const request = newAuthorizationRequest(params);
    try {
      await ctx.get(OAuthAuthorizationService).validateAuthorizationRequest(ctx.em, request);
    } catch (error) {
      // Once the redirect URI is known to be registered, errors go back to the client.
      if (isOAuthError(error) && request.redirectUri && error.exposed) {
        return redirect(withQuery(request.redirectUri, { error: error.code, error_description: error.description, state: request.state, iss: issuer }));
      }
      throw error;
    }
    const consent = `${(config.frontendUrl ?? issuer).replace(/\/+$/, '')}/oauth/consent`;
    return redirect(
      withQuery(consent, {
        client_id: request.app!.clientId,
        redirect_uri: request.redirectUri,
        scope: request.scopes!.join(' '),
        state: request.state,
        code_challenge: request.codeChallenge,
        code_challenge_method: 'S256',
        prompt: request.prompt.size ? [...request.prompt].join(' ') : undefined,
        login_hint: request.loginHint,
        display: request.display,
      }),
    );
  },
});

const confirm = defineRoute({
  method: 'POST',
  path: '/oauth/authorize',
  summary: 'Confirm an authorization for the signed-in user and get the redirect with the code',
  refuseImpersonation: true,
  description:
    'Called by the consent page with the user\'s JWT. The parameters are validated again; the code is single use, bound to client, redirect URI, ' +
    'PKCE challenge, scope and user, and expires after `oauth.authorizationCodeTtlSeconds` (default 60).',
  tags,
  auth: ['jwt'],
  body: AuthorizeBody,
  ...protocol,
  response: { schema: redirectToSchema },
  errors: { 400: 'A parameter breaks a rule (invalid_request, invalid_client, invalid_scope)', 429: 'Rate limited (temporarily_unavailable)' },
  async handler(ctx) {
    const params: AuthorizationParams = paramsOf(ctx.body, ['client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method']);
    await ctx.get(OAuthRateLimiter).check('authorize', ctx.ip, params.client_id);
    const issuer = issuerOf(configOf(ctx), ctx.get(kernelServiceIdentifier).servedUrl);
    const redirectTo = await ctx.get(OAuthAuthorizationService).confirm(ctx.em, params, ctx.requirePrincipal().userId, issuer);
    return Reply.json({ redirectTo }, 200, noStore);
  },
});

const token = defineRoute({
  method: 'POST',
  path: '/oauth/token',
  summary: 'Exchange an authorization code or rotate a refresh token',
  description:
    'Form-encoded. grant_type=authorization_code: code, client_id, redirect_uri, code_verifier. grant_type=refresh_token: refresh_token, client_id ' +
    '(and optionally a narrower scope). A reused code or a rotated refresh token answers invalid_grant and revokes its whole token family.',
  tags,
  auth: 'none',
  cors: 'any',
  body: TokenBody,
  bodyTypes: ['form'],
  ...protocol,
  response: { schema: tokenResponseSchema },
  errors: {
    400: 'invalid_request, invalid_client, invalid_grant, invalid_scope, unsupported_grant_type',
    401: 'invalid_client when the client sent an Authorization: Basic header (with WWW-Authenticate: Basic, RFC 6749 §5.2)',
    415: 'Not form-encoded (invalid_request)',
    429: 'Rate limited (temporarily_unavailable)',
  },
  async handler(ctx) {
    const params: TokenParams = paramsOf(ctx.body, tokenNames);
    await ctx.get(OAuthRateLimiter).check('token', ctx.ip, params.client_id);
    try {
      const tokens = await ctx.get(OAuthTokenService).grant(ctx.em, params, { ip: ctx.ip, userAgent: ctx.userAgent });
      return Reply.json(tokens, 200, noStore);
    } catch (error) {
      if (error instanceof InvalidClient && /^basic\s/i.test(ctx.headers['authorization'] ?? '')) throw InvalidClient.afterBasic(error);
      throw error;
    }
  },
});

const revoke = defineRoute({
  method: 'POST',
  path: '/oauth/revoke',
  summary: 'Revoke an access or refresh token (RFC 7009)',
  description:
    'Form-encoded: token, token_type_hint, client_id. Always 200 `{}`, whether or not the token was valid or sent; revoking a refresh token ends ' +
    'its whole family, access tokens included. With client_id, a token of another client is left alone (still 200).',
  tags,
  auth: 'none',
  cors: 'any',
  body: RevokeBody,
  bodyTypes: ['form'],
  ...protocol,
  response: { schema: emptyObjectSchema },
  errors: { 429: 'Rate limited (temporarily_unavailable)' },
  async handler(ctx) {
    const token = present(ctx.body.token);
    const clientId = present(ctx.body.client_id);
    await ctx.get(OAuthRateLimiter).check('revoke', ctx.ip, clientId);
    // Always 200, even without a token: there is nothing to revoke.
    if (!token) return Reply.json({}, 200, noStore);
    await ctx.get(OAuthTokenService).revoke(ctx.em, token, clientId);
    return Reply.json({}, 200, noStore);
  },
});

const userinfo = defineRoute({
  method: 'GET',
  path: '/oauth/userinfo',
  summary: 'The user behind an OAuth access token',
  description: 'Needs `Authorization: Bearer <toa_ access token>` with the scope profile:read or mobile:full. Failures carry a `WWW-Authenticate: Bearer` challenge (RFC 6750 §3).',
  tags,
  // Every kind is read so that a non-OAuth credential gets RFC 6750's 401 invalid_token below.
  auth: { optional: allCredentialKinds },
  scopes: ['profile:read'],
  cors: 'any',
  errorFormat: 'oauth',
  response: { schema: userInfoSchema },
  errors: { 401: 'Missing, invalid, expired or revoked token (invalid_token)', 403: 'The token lacks profile:read (insufficient_scope)' },
  async handler(ctx) {
    const principal = ctx.principal;
    if (!principal) throw ctx.credentialRefusal ?? new InvalidToken('An OAuth access token is required.', { tokenSent: false });
    if (principal.kind !== 'oauth') throw new InvalidToken('This endpoint accepts only OAuth access tokens.');
    return Reply.json(await ctx.get(OAuthUserInfoService).userInfo(ctx.em, principal), 200, noStore);
  },
});

function redirect(location: string): Reply {
  return Reply.empty(302, { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
}

export const protocolRoutes: RouteDefinition[] = [authorize, confirm, token, revoke, userinfo];
