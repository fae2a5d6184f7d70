import { IsString, MaxLength } from 'class-validator';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { configServiceIdentifier, kernelServiceIdentifier } from '../../../kernel/tokens.js';
import { oauthConfigServiceIdentifier } from '../config.js';
import { InvalidClient } from '../oauth-errors.js';
import { publicAppSchema, metadataSchema } from '../schemas.js';
import { issuerOf } from '../services/issuer.js';
import { OAuthAppService } from '../services/oauth-app.service.js';
import { OAuthAuthorizationService } from '../services/oauth-authorization.service.js';
import { toPublicView } from '../views.js';

const tags = ['OAuth'];

class PublicAppParams {
  @IsString()
  @MaxLength(256)
  clientId!: string;
}

const publicApp = defineRoute({
  method: 'GET',
  path: '/oauth/apps/:clientId/public',
  summary: 'Public view of an OAuth app (for the consent page)',
  tags,
  auth: 'none',
  params: PublicAppParams,
  errorFormat: 'oauth',
  response: { schema: publicAppSchema },
  errors: { 404: 'No active app has this client_id (invalid_client)' },
  async handler(ctx) {
    const app = await ctx.get(OAuthAppService).findActive(ctx.em, ctx.params.clientId);
    if (!app) throw new InvalidClient('No active application has this client_id.', 404);
    return toPublicView(app, ctx.get(OAuthAuthorizationService).catalogue);
  },
});

/** RFC 8414 §2 (and RFC 9207 §3 for `authorization_response_iss_parameter_supported`). */
const metadata = defineRoute({
  method: 'GET',
  path: '/.well-known/oauth-authorization-server',
  summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
  description: 'The issuer is `publicUrl` when configured, otherwise the scheme and host of the request plus the base path.',
  tags,
  auth: 'none',
  cors: 'any',
  response: { schema: metadataSchema },
  handler(ctx) {
    const config: TrellisConfig = ctx.get(configServiceIdentifier);
    const issuer = issuerOf(config, ctx.get(kernelServiceIdentifier).servedUrl);
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      ...(ctx.get(oauthConfigServiceIdentifier).dynamicRegistration.enabled ? { registration_endpoint: `${issuer}/oauth/register` } : {}),
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      scopes_supported: Object.keys(ctx.get(OAuthAuthorizationService).catalogue),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      code_challenge_methods_supported: ['S256'],
      prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
      display_values_supported: ['popup'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${issuer}/docs`,
    };
  },
});

export const appInfoRoutes: RouteDefinition[] = [publicApp, metadata];
