import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, MaxLength } from 'class-validator';
import { TrellisError, isTrellisError } from '../../../kernel/errors.js';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute } from '../../../kernel/http/route.js';
import { oauthConfigServiceIdentifier, type OAuthConfig } from '../config.js';
import { registrationSchema, type RegistrationView } from '../schemas.js';
import { parseScope } from '../scopes.js';
import { OAuthAppService } from '../services/oauth-app.service.js';
import { OAuthRateLimiter } from '../services/oauth-rate-limiter.js';

/** RFC 7591 §2 client metadata: the fields Trellis reads (others are ignored, §3.2.1 lets a server drop them). */
@Schema({ name: 'ClientRegistrationRequest', description: 'RFC 7591 client metadata. Only public clients (token_endpoint_auth_method none) with the authorization code grant are registered.' })
class RegistrationBody {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @MaxLength(2000, { each: true })
  redirect_uris!: string[];

  @IsOptional()
  @IsString()
  @MaxLength(100)
  client_name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(1000)
  @Doc({ description: 'Space-separated scopes (default `mcp:tools`); each must be one of `oauth.dynamicRegistration.scopes`.' })
  scope?: string;

  @IsOptional()
  @IsString()
  token_endpoint_auth_method?: string;

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  grant_types?: string[];

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  response_types?: string[];

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  client_uri?: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  logo_uri?: string;
}

const metadataError = (description: string, code = 'invalid_client_metadata') => new TrellisError('bad_request', code, description);

/** The metadata a dynamically registered client may have, or a `invalid_client_metadata` refusal. */
function checkMetadata(body: RegistrationBody, config: OAuthConfig): string[] {
  if (body.token_endpoint_auth_method !== undefined && body.token_endpoint_auth_method !== 'none') {
    throw metadataError('Only public clients are registered: token_endpoint_auth_method must be none (use PKCE).');
  }
  if (body.grant_types?.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) throw metadataError('grant_types may list authorization_code and refresh_token only.');
  if (body.response_types?.some((r) => r !== 'code')) throw metadataError('response_types may list code only.');
  const scopes = body.scope === undefined ? ['mcp:tools'] : parseScope(body.scope);
  if (!scopes || scopes.length === 0) throw metadataError('scope is a space-separated list of scopes.');
  const refused = scopes.filter((scope) => !config.dynamicRegistration.scopes.includes(scope));
  if (refused.length) throw metadataError(`A dynamically registered client may not ask for: ${refused.join(' ')}.`);
  return scopes;
}

/**
 * RFC 7591 dynamic client registration, for MCP clients and other public clients that register
 * themselves. An administrator switches it off with `oauth.dynamicRegistration.enabled: false`.
 * The client is an ordinary OAuth app (listed, disabled and deleted under /admin/oauth-apps).
 */
export const registrationRoute = defineRoute({
  method: 'POST',
  path: '/oauth/register',
  summary: 'Register an OAuth client (RFC 7591 dynamic client registration)',
  description: 'Public clients only (PKCE, no secret). Rate limited like the other OAuth endpoints. Off when `oauth.dynamicRegistration.enabled` is false (403 access_denied).',
  tags: ['OAuth'],
  auth: 'none',
  cors: 'any',
  body: RegistrationBody,
  unknownFields: 'ignore',
  errorFormat: 'oauth',
  validationError: { status: 400, code: 'invalid_client_metadata' },
  noStore: true,
  response: { status: 201, schema: registrationSchema },
  errors: {
    400: 'A redirect URI the server refuses (invalid_redirect_uri), other metadata it refuses (invalid_client_metadata)',
    403: 'Dynamic registration is switched off (access_denied)',
    429: 'Rate limited (temporarily_unavailable)',
  },
  async handler(ctx) {
    const config = ctx.get(oauthConfigServiceIdentifier);
    if (!config.dynamicRegistration.enabled) throw new TrellisError('forbidden', 'access_denied', 'Dynamic client registration is switched off on this server; ask an administrator for a client.');
    await ctx.get(OAuthRateLimiter).check('register', ctx.ip, undefined);
    const scopes = checkMetadata(ctx.body, config);
    const name = ctx.body.client_name?.trim() || 'Dynamically registered client';
    try {
      const app = await ctx.get(OAuthAppService).create(ctx.em, {
        name,
        description: 'Registered through dynamic client registration (RFC 7591).',
        redirect_uris: ctx.body.redirect_uris,
        scopes,
        homepage_url: ctx.body.client_uri ?? null,
        logo_url: ctx.body.logo_uri ?? null,
      });
      const registered: RegistrationView = {
        client_id: app.clientId,
        client_id_issued_at: Math.floor(app.createdAt.getTime() / 1000),
        client_name: app.name,
        redirect_uris: [...app.redirectUris],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: app.scopes.join(' '),
      };
      return Reply.json(registered, 201);
    } catch (error) {
      if (isTrellisError(error) && error.code === 'invalid_redirect_uri') throw metadataError(error.details?.[0]?.message ? `A redirect URI ${error.details[0].message}.` : error.message, 'invalid_redirect_uri');
      if (isTrellisError(error) && error.kind === 'validation') throw metadataError(error.message);
      throw error;
    }
  },
});
