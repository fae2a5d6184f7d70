import { inject, injectable } from 'inversify';
import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { findPrincipalUser } from '../queries.js';
import { JwtService } from '../services/jwt.service.js';
import { impersonationEnded, sessionEnded, unknownOrDisabledUser } from './errors.js';

const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * User JWTs: three dot-separated base64url parts, HS256, issued by `POST /auth/login`. The user
 * (and the administrator behind a `become` token) is read with a prepared statement.
 */
@injectable()
export class JwtVerifier implements CredentialVerifier {
  readonly kind = 'jwt' as const;

  constructor(
    @inject(JwtService) private readonly jwt: JwtService,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {}

  accepts(token: string): boolean {
    return jwtShape.test(token);
  }

  async verify(token: string, _meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs: number }> {
    const claims = await this.jwt.verify(token);
    const found = await findPrincipalUser(this.sql, claims.sub);
    if (!found || found.user.status !== 'active') throw unknownOrDisabledUser();
    const { user, passwordChangedAt } = found;
    // A password change ends the sessions begun before it (tokens carry whole seconds, so a token
    // issued in the second of the change stays valid: the login that follows the change).
    if (passwordChangedAt && claims.iat < Math.floor(passwordChangedAt.getTime() / 1000)) throw sessionEnded();
    if (claims.act) {
      // A `become` token lives only while the administrator behind it is active and still one.
      const actor = (await findPrincipalUser(this.sql, claims.act.sub))?.user;
      if (!actor || actor.status !== 'active' || !(actor.isAdministrator || actor.isSiteAdmin)) throw impersonationEnded();
    }
    return {
      principal: {
        kind: 'jwt',
        userId: user.id,
        user,
        credentialId: claims.jti,
        ...(claims.act ? { actorId: claims.act.sub } : {}),
      },
      expiresAtMs: claims.exp * 1000,
    };
  }
}
