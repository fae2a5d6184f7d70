import type { ServiceIdentifier } from 'inversify';
import { s, type InferConfig } from '../../kernel/config/schema.js';

/** Configuration of the OAuth 2.0 authorization server, found at `config.oauth`. */
export const oauthConfigSchema = s.object({
  authorizationCodeTtlSeconds: s
    .int()
    .range(10, 600)
    .default(60)
    .describe('Lifetime of an authorization code (RFC 6749 §4.1.2 recommends at most 10 minutes).'),
  accessTokenTtlSeconds: s.int().range(60, 86_400).default(3600).describe('Lifetime of an access token (`expires_in`).'),
  refreshTokenTtlSeconds: s
    .int()
    .range(300)
    .default(2_592_000)
    .describe('Lifetime of a refresh token from its issue; each rotation issues a new one (sliding expiry, default 30 days).'),
  familyLifetimeSeconds: s
    .int()
    .range(0)
    .default(7_776_000)
    .describe('Absolute lifetime of a token family (one authorization and all its rotations; default 90 days). 0 means no limit. After it the user must authorize again (RFC 9700 §4.14.2).'),
  refreshGraceSeconds: s
    .int()
    .range(0, 120)
    .default(0)
    .describe('Seconds after a rotation during which the rotated refresh token may be exchanged again without counting as reuse (a benign double refresh). 0: any second use revokes the family.'),
  auditWriteIntervalSeconds: s
    .int()
    .range(0, 3600)
    .default(60)
    .describe('A token\'s last_used_at, last_used_ip and last_used_user_agent are written at most this often (0: on every verification).'),
  mobileClientIds: s.object({
    production: s.string().orUndefined().describe('client_id of the production native app; it may hold the mobile:full scope.'),
    sandbox: s.string().orUndefined().describe('client_id of the sandbox native app; it may hold the mobile:full scope.'),
  }),
  extraScopes: s
    .record(s.string())
    .default({})
    .describe('Scopes beyond profile:read, chat:completions and mobile:full that apps may hold: name to description (shown on the consent page).'),
  dynamicRegistration: s.object({
    enabled: s
      .boolean()
      .default(true)
      .describe('Let clients register themselves at POST /oauth/register (RFC 7591 dynamic client registration), as MCP clients do. false: the endpoint answers 403 and the metadata leaves out registration_endpoint.'),
    scopes: s
      .array(s.string())
      .default(['mcp:tools', 'profile:read'])
      .describe('Scopes a dynamically registered client may ask for (a request for others is refused with invalid_client_metadata).'),
  }),
  rateLimit: s.object({
    enabled: s.boolean().default(true).describe('Limit requests to /oauth/authorize, /oauth/token, /oauth/revoke and /oauth/register.'),
    windowSeconds: s.int().range(1, 3600).default(60).describe('Length of one rate-limit window.'),
    perIp: s.int().range(1).default(120).describe('Requests one client address may make to one endpoint per window.'),
    perClient: s.int().range(1).default(600).describe('Requests naming one client_id may make to one endpoint per window.'),
  }),
});

export type OAuthConfig = InferConfig<typeof oauthConfigSchema>;

/** The validated `oauth` configuration section. */
export const oauthConfigServiceIdentifier: ServiceIdentifier<OAuthConfig> = Symbol.for('@trellis/core/oauth/Config');
