import { extractBearer } from '../../../kernel/auth/authenticator.js';
import { sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { JwtService, sessionSchema, toUserView } from '../../identity/index.js';
import { OAuthToken, InvalidRequest, UnsupportedGrantType, tokenResponseSchema, OAuthTokenService, ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, type TokenResponse } from '../../oauth/index.js';
import { AnonymousSignInBody, AnonymousUpgradeBody, ToolRefreshBody, ToolTokenBody } from '../dto/anonymous.dto.js';
import { ANONYMOUS_TOKEN_PREFIX, AnonymousAuthService } from '../services/anonymous-auth.service.js';
import { ToolRateLimiter } from '../services/tool-rate-limiter.js';
import { anonymousTokenSchema, type AnonymousTokenResponse } from '../schemas.js';
import { Type } from '../../../kernel/http/response-schema.js';

const tags = ['Tool service'];
const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' };
const form = { errorFormat: 'oauth', validationError: { status: 400, code: 'invalid_request' }, unknownFields: 'ignore', bodyTypes: ['form'] } as const;

const present = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);

export const toolOAuthRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/tool/home/oauth/anonymous',
    summary: 'Anonymous sign-in: creates the anonymous user on first use',
    description:
      'A new `anonymous` identifier creates a user (with a personal team) whose password is `passwd`; a known one must give the same password. Answers an access token valid 1 hour and a refresh token valid 30 days (`tan_`). Rate limited per address and per identifier.',
    tags,
    auth: 'none',
    body: AnonymousSignInBody,
    validationError: { status: 400, code: 'validation_failed' },
    response: { schema: anonymousTokenSchema },
    errors: {
      400: 'Missing or malformed anonymous or passwd (validation_failed)',
      401: 'Wrong password for this identifier (invalid_credentials)',
      403: 'The account was upgraded to a registered one (anonymous_account_upgraded), or is disabled (account_disabled)',
      429: 'Rate limited (rate_limited)',
    },
    async handler(ctx) {
      await ctx.get(ToolRateLimiter).check('anonymous', ctx.ip, ctx.body.anonymous);
      return Reply.json(await ctx.get(AnonymousAuthService).signIn(ctx.em, ctx.body.anonymous, ctx.body.passwd), 200, noStore);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/home/oauth/token',
    summary: "Exchange an authorization code of Trellis's OAuth server",
    description:
      'Form-encoded: grant_type=authorization_code, code, client_id, and the redirect_uri and code_verifier (PKCE S256) the OAuth server requires. Same checks and tokens as POST /oauth/token (`toa_`/`tor_`).',
    tags,
    auth: 'none',
    body: ToolTokenBody,
    ...form,
    response: { schema: tokenResponseSchema },
    errors: { 400: 'invalid_request, invalid_client, invalid_grant (expired or used code), unsupported_grant_type', 429: 'Rate limited (temporarily_unavailable)' },
    async handler(ctx) {
      const grantType = present(ctx.body.grant_type);
      if (!grantType) throw new InvalidRequest('grant_type is required.');
      if (grantType !== 'authorization_code') throw new UnsupportedGrantType('grant_type must be authorization_code (refresh tokens go to /tool/home/oauth/rtoken).');
      await ctx.get(ToolRateLimiter).check('token', ctx.ip);
      const { code, client_id, redirect_uri, code_verifier } = ctx.body;
      const tokens = await ctx.get(OAuthTokenService).grant(
        ctx.em,
        { grant_type: grantType, code: present(code), client_id: present(client_id), redirect_uri: present(redirect_uri), code_verifier: present(code_verifier) },
        { ip: ctx.ip, userAgent: ctx.userAgent },
      );
      return Reply.json(tokens, 200, noStore);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/home/oauth/rtoken',
    summary: 'Rotate a refresh token (anonymous `tan_` or OAuth `tor_`)',
    description:
      'Form-encoded: grant_type=refresh_token, refresh_token, client_id (required for OAuth `tor_` tokens). The refresh token is single use: a new pair is issued in the same family, and presenting a used one again revokes the whole family. The old access token may come as `Authorization: Bearer`; it must belong to the same family (403 otherwise) and is revoked.',
    tags,
    auth: 'none',
    body: ToolRefreshBody,
    ...form,
    // Published as `oneOf` (an answer is one kind of token pair; TypeBox's Union would publish `anyOf`).
    response: { schema: Type.Unsafe<AnonymousTokenResponse | TokenResponse>({ oneOf: [anonymousTokenSchema, tokenResponseSchema] }) },
    errors: {
      400: 'invalid_request, invalid_grant (unknown, expired, revoked or reused refresh token), unsupported_grant_type',
      401: 'Malformed Authorization header (invalid_token)',
      403: 'The bearer access token belongs to another sign-in, or the account was upgraded or disabled (access_denied)',
      429: 'Rate limited (temporarily_unavailable)',
    },
    async handler(ctx) {
      const grantType = present(ctx.body.grant_type);
      const refreshToken = present(ctx.body.refresh_token);
      if (!grantType) throw new InvalidRequest('grant_type is required.');
      if (grantType !== 'refresh_token') throw new UnsupportedGrantType('grant_type must be refresh_token.');
      if (!refreshToken) throw new InvalidRequest('refresh_token is required.');
      await ctx.get(ToolRateLimiter).check('rtoken', ctx.ip);
      const bearer = extractBearer(ctx.headers);
      if (refreshToken.startsWith(ANONYMOUS_TOKEN_PREFIX)) {
        return Reply.json(await ctx.get(AnonymousAuthService).rotate(ctx.em, refreshToken, bearer), 200, noStore);
      }
      if (!refreshToken.startsWith(REFRESH_TOKEN_PREFIX)) throw new InvalidRequest('refresh_token is neither an anonymous (tan_) nor an OAuth (tor_) refresh token.');
      let oldAccess: OAuthToken | null = null;
      if (bearer !== null) {
        const refreshRow = await ctx.em.findOne(OAuthToken, { tokenHash: sha256Hex(refreshToken), kind: 'refresh' });
        oldAccess = bearer.startsWith(ACCESS_TOKEN_PREFIX) ? await ctx.em.findOne(OAuthToken, { tokenHash: sha256Hex(bearer), kind: 'access' }) : null;
        if (refreshRow && (!oldAccess || oldAccess.tokenFamily.id !== refreshRow.tokenFamily.id)) {
          throw new TrellisError('forbidden', 'access_denied', 'The bearer access token does not belong to this refresh token.');
        }
      }
      const service = ctx.get(OAuthTokenService);
      const tokens = await service.grant(
        ctx.em,
        { grant_type: grantType, refresh_token: refreshToken, client_id: present(ctx.body.client_id), scope: present(ctx.body.scope) },
        { ip: ctx.ip, userAgent: ctx.userAgent },
      );
      if (bearer !== null && oldAccess) await service.revoke(ctx.em, bearer, undefined);
      return Reply.json(tokens, 200, noStore);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/home/oauth/upgrade',
    summary: 'Upgrade the calling anonymous user to a registered one',
    description:
      'Gives the anonymous user (the same user id, so all its data stays) an email and a password; anonymous sign-in ends for its identifier and its `tan_` tokens are revoked. Answers a JWT session like POST /auth/login.',
    tags,
    auth: ['anonymous'],
    body: AnonymousUpgradeBody,
    response: { schema: sessionSchema },
    errors: { 403: 'Not an anonymous user (not_anonymous)', 409: 'The email is taken (email_taken)', 422: 'Invalid values, or the password is too short (weak_password)' },
    async handler(ctx) {
      const user = await ctx.get(AnonymousAuthService).upgrade(ctx.em, ctx.requirePrincipal().userId, ctx.body.email, ctx.body.password, ctx.body.name);
      const { token, expiresIn } = await ctx.get(JwtService).sign(user.id);
      return { token, tokenType: 'Bearer' as const, expiresIn, user: toUserView(user) };
    },
  }),
];
