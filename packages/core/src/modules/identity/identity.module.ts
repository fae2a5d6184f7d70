import { ContainerModule } from 'inversify';
import { credentialVerifierServiceIdentifier } from '../../kernel/auth/authenticator.js';
import { defineModule } from '../../kernel/module.js';
import { clockServiceIdentifier } from '../../ports/clock.js';
import { authRoutes } from './auth.routes.js';
import { AccessKeySchema } from './entities/access-key.entity.js';
import { TeamMemberSchema, TeamSchema } from './entities/team.entity.js';
import { UserSchema } from './entities/user.entity.js';
import { migrations } from './migrations/index.js';
import { AccessKeyService } from './services/access-key.service.js';
import { AuthRateLimiter } from './services/auth-rate-limiter.js';
import { JwtService } from './services/jwt.service.js';
import { TeamService } from './services/team.service.js';
import { UserService } from './services/user.service.js';
import { teamRoutes } from './team.routes.js';
import { AccessKeyVerifier } from './verifiers/access-key.verifier.js';
import { preparedStatementsServiceIdentifier } from '../../kernel/prepared-statements.js';
import { JwtVerifier } from './verifiers/jwt.verifier.js';

/**
 * Users, teams, JWT login, API keys and agent tokens, and the credential verifiers the combined
 * authenticator uses for those kinds. Every other module builds on it.
 */
export const identityModule = defineModule({
  name: 'identity',
  entities: [UserSchema, TeamSchema, TeamMemberSchema, AccessKeySchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(UserService).toSelf();
      bind(TeamService).toSelf();
      bind(JwtService).toSelf();
      bind(AccessKeyService).toSelf();
      bind(AuthRateLimiter).toSelf();
      bind(credentialVerifierServiceIdentifier).to(JwtVerifier);
      for (const kind of ['api_key', 'agent_token'] as const) {
        bind(credentialVerifierServiceIdentifier).toDynamicValue(
          (ctx) => new AccessKeyVerifier(kind, ctx.get(preparedStatementsServiceIdentifier), ctx.get(clockServiceIdentifier)),
        );
      }
    }),
  routes: [...authRoutes, ...teamRoutes],
});
