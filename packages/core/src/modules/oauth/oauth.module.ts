import { ContainerModule } from 'inversify';
import { credentialVerifierServiceIdentifier } from '../../kernel/auth/authenticator.js';
import { defineModule } from '../../kernel/module.js';
import { InMemoryRateLimiter, rateLimiterServiceIdentifier } from '../../ports/rate-limiter.js';
import { oauthConfigSchema, oauthConfigServiceIdentifier, type OAuthConfig } from './config.js';
import { OAuthAuditEventSchema } from './entities/audit-event.entity.js';
import { OAuthAuthorizationCodeSchema } from './entities/authorization-code.entity.js';
import { OAuthAppSchema } from './entities/oauth-app.entity.js';
import { OAuthTokenSchema } from './entities/oauth-token.entity.js';
import { OAuthTokenFamilySchema } from './entities/token-family.entity.js';
import { migrations } from './migrations/index.js';
import { purgeJob } from './purge.job.js';
import { oauthRoutes } from './routes/index.js';
import { OAuthAppService } from './services/oauth-app.service.js';
import { OAuthAuditService } from './services/oauth-audit.service.js';
import { OAuthAuthorizationService } from './services/oauth-authorization.service.js';
import { OAuthRateLimiter } from './services/oauth-rate-limiter.js';
import { OAuthTokenService } from './services/oauth-token.service.js';
import { OAuthUserInfoService } from './services/oauth-userinfo.service.js';
import { OAuthAccessTokenVerifier } from './verifiers/oauth-access-token.verifier.js';

/**
 * The OAuth 2.0 authorization server: Authorization Code with PKCE (S256 only), rotating refresh
 * tokens with reuse detection, revocation (RFC 7009), user info, RFC 8414 metadata, app
 * administration, and the verifier that lets OAuth access tokens into other routes for the scopes
 * they carry.
 */
export const oauthModule = defineModule({
  name: 'oauth',
  dependsOn: ['identity'],
  config: oauthConfigSchema,
  entities: [OAuthAppSchema, OAuthAuthorizationCodeSchema, OAuthTokenFamilySchema, OAuthTokenSchema, OAuthAuditEventSchema],
  migrations,
  container: ({ section }) =>
    new ContainerModule(({ bind, isBound }) => {
      bind(oauthConfigServiceIdentifier).toConstantValue(section as OAuthConfig);
      // The embedded default; an adapter (`@trellis/ratelimit-redis`) bound by the host replaces it.
      if (!isBound(rateLimiterServiceIdentifier)) bind(rateLimiterServiceIdentifier).toConstantValue(new InMemoryRateLimiter());
      bind(OAuthAuditService).toSelf();
      bind(OAuthRateLimiter).toSelf();
      bind(OAuthAuthorizationService).toSelf();
      bind(OAuthTokenService).toSelf();
      bind(OAuthAppService).toSelf();
      bind(OAuthUserInfoService).toSelf();
      bind(credentialVerifierServiceIdentifier).to(OAuthAccessTokenVerifier);
    }),
  routes: oauthRoutes,
  jobs: [purgeJob],
  onStart({ config, log }) {
    if (!config.publicUrl) {
      log.warn(
        'publicUrl is not set: the OAuth issuer (metadata, the iss of every authorization response, the consent page) is pinned to the address the host listens on. Set publicUrl whenever clients reach Trellis at another address (a proxy, a domain name).',
      );
    }
  },
});
