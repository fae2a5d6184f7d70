import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { Reply } from '../../kernel/http/reply.js';
import { IdParams } from '../../kernel/http/dto/id-params.js';
import { PageQuery, pageOfAll, paging } from '../../kernel/http/dto/paging.js';
import { TrellisError } from '../../kernel/errors.js';
import { configServiceIdentifier } from '../../kernel/tokens.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { ChangePasswordBody, CreateAccessKeyBody, LoginBody, RegisterBody, UpdateProfileBody } from './dto/auth.dto.js';
import type { AccessKeyKind } from './entities/access-key.entity.js';
import type { User } from './entities/user.entity.js';
import { accessKeySchema, issuedAccessKeySchema, meCredentialKinds, meSchema, sessionSchema, userSchema, type SessionView } from './schemas.js';
import { AccessKeyService } from './services/access-key.service.js';
import { AuthRateLimiter } from './services/auth-rate-limiter.js';
import { JwtService } from './services/jwt.service.js';
import { UserService } from './services/user.service.js';
import { TeamService } from './services/team.service.js';
import { toAccessKeyView, toUserView } from './views.js';
import type { RequestContext } from '../../kernel/http/route.js';

const tags = ['Identity'];

async function session(ctx: RequestContext, user: User): Promise<SessionView> {
  const { token, expiresIn } = await ctx.get(JwtService).sign(user.id);
  return { token, tokenType: 'Bearer', expiresIn, user: toUserView(user) };
}

const register = defineRoute({
  method: 'POST',
  path: '/auth/register',
  summary: 'Create an account',
  noStore: true,
  description: 'Creates a user with a one-person personal team and returns a JWT. Closed when `auth.allowRegistration` is false.',
  tags,
  auth: 'none',
  body: RegisterBody,
  response: { status: 201, schema: sessionSchema },
  errors: {
    403: 'Registration is closed (registration_closed)',
    409: 'The email is taken (email_taken)',
    429: 'Too many registrations from this address or for this email (too_many_attempts); see Retry-After',
  },
  async handler(ctx) {
    if (!ctx.get(configServiceIdentifier).auth.allowRegistration) {
      throw new TrellisError('forbidden', 'registration_closed', 'Registration is closed on this server; ask an administrator for an account.');
    }
    await ctx.get(AuthRateLimiter).check('register', ctx.ip, ctx.body.email);
    const user = await ctx.get(UserService).create(ctx.em, ctx.body);
    return Reply.json(await session(ctx, user), 201);
  },
});

const login = defineRoute({
  method: 'POST',
  path: '/auth/login',
  summary: 'Log in with email and password',
  noStore: true,
  tags,
  auth: 'none',
  body: LoginBody,
  response: { schema: sessionSchema },
  errors: {
    401: 'Wrong email or password (invalid_credentials), or the account is disabled (account_disabled)',
    429: 'Too many login attempts from this address or for this account (too_many_attempts); see Retry-After',
  },
  async handler(ctx) {
    await ctx.get(AuthRateLimiter).check('login', ctx.ip, ctx.body.email);
    const user = await ctx.get(UserService).verifyCredentials(ctx.em, ctx.body.email, ctx.body.password);
    return session(ctx, user);
  },
});

const me = defineRoute({
  method: 'GET',
  path: '/auth/me',
  summary: 'The caller and the credential used',
  tags,
  auth: meCredentialKinds,
  // A scoped credential (an OAuth token, a scoped API key) needs profile:read (or a full-access scope).
  scopes: ['profile:read'],
  response: { schema: meSchema },
  async handler(ctx) {
    const principal = ctx.requirePrincipal();
    // `auth` lets only these kinds in (a device token never reaches this handler).
    const kind = principal.kind as (typeof meCredentialKinds)[number];
    return {
      user: principal.user,
      teams: [...(await ctx.get(TeamService).teamsOf(principal.userId))],
      credential: {
        kind,
        ...(principal.scopes ? { scopes: [...principal.scopes] } : {}),
        ...(principal.actorId ? { actorId: principal.actorId } : {}),
      },
    };
  },
});

const updateMe = defineRoute({
  method: 'PATCH',
  path: '/auth/me',
  summary: 'Update your name or avatar',
  tags,
  auth: ['jwt'],
  body: UpdateProfileBody,
  response: { schema: userSchema },
  async handler(ctx) {
    const user = await ctx.get(UserService).update(ctx.em, ctx.requirePrincipal().userId, ctx.body);
    return toUserView(user);
  },
});

const changePassword = defineRoute({
  method: 'POST',
  path: '/auth/password',
  summary: 'Change your password',
  refuseImpersonation: true,
  tags,
  auth: ['jwt'],
  body: ChangePasswordBody,
  response: { status: 204 },
  errors: { 403: 'The current password is wrong (invalid_current_password)' },
  async handler(ctx) {
    await ctx.get(UserService).changePassword(ctx.em, ctx.requirePrincipal().userId, ctx.body.currentPassword, ctx.body.newPassword);
  },
});

/** Issue, list and revoke routes for one kind of access key. */
function accessKeyRoutes(kind: AccessKeyKind, path: string, label: string): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path,
      summary: `Issue ${label}`,
      noStore: true,
      refuseImpersonation: true,
      description: `The token is in the response this once; only its SHA-256 digest is stored. Needs a user JWT.`,
      tags,
      auth: ['jwt'],
      body: CreateAccessKeyBody,
      response: { status: 201, schema: issuedAccessKeySchema },
      errors: { 409: 'Too many active credentials of this kind (too_many_credentials)', 422: 'Invalid fields, or a scope no route accepts (unknown_scope)' },
      async handler(ctx) {
        const { key, token } = await ctx.get(AccessKeyService).issue(ctx.em, ctx.requirePrincipal().userId, kind, ctx.body);
        return Reply.json({ token, credential: toAccessKeyView(key) }, 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path,
      summary: `List your ${label}s`,
      tags,
      auth: ['jwt', 'api_key'],
      query: PageQuery,
      response: { schema: pageSchema(accessKeySchema) },
      async handler(ctx) {
        const keys = await ctx.get(AccessKeyService).list(ctx.em, ctx.requirePrincipal().userId, kind);
        return pageOfAll(keys.map(toAccessKeyView), paging(ctx.query));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${path}/:id`,
      summary: `Revoke ${label}`,
      tags,
      auth: ['jwt', 'api_key'],
      params: IdParams,
      response: { schema: accessKeySchema },
      errors: { 404: 'No such credential of yours (credential_not_found)' },
      async handler(ctx) {
        const key = await ctx.get(AccessKeyService).revoke(ctx.em, ctx.requirePrincipal().userId, kind, ctx.params.id);
        return toAccessKeyView(key);
      },
    }),
  ];
}

export const authRoutes: RouteDefinition[] = [
  register,
  login,
  me,
  updateMe,
  changePassword,
  ...accessKeyRoutes('api_key', '/auth/api-keys', 'an API key'),
  ...accessKeyRoutes('agent_token', '/auth/agent-tokens', 'an agent token'),
];
