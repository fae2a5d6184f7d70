import { inject, injectable } from 'inversify';
import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { ormServiceIdentifier } from '../../../kernel/tokens.js';
import type { MikroORM } from '@mikro-orm/core';
import { JwtService } from '../services/jwt.service.js';
import { User } from '../entities/user.entity.js';
import { toPrincipalUser } from '../views.js';
import { impersonationEnded, sessionEnded, unknownOrDisabledUser } from './errors.js';

const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** User JWTs: three dot-separated base64url parts, HS256, issued by `POST /auth/login`. */
@injectable()
export class JwtVerifier implements CredentialVerifier {
  readonly kind = 'jwt' as const;

  constructor(
    @inject(JwtService) private readonly jwt: JwtService,
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
  ) {}

  accepts(token: string): boolean {
    return jwtShape.test(token);
  }

  async verify(token: string, _meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs: number }> {
    const claims = await this.jwt.verify(token);
    const em = this.orm.em.fork();
    const user = await em.findOne(User, { id: claims.sub });
    if (!user || user.status !== 'active') throw unknownOrDisabledUser();
    // A password change ends the sessions begun before it (tokens carry whole seconds, so a token
    // issued in the second of the change stays valid: the login that follows the change).
    if (user.passwordChangedAt && claims.iat < Math.floor(user.passwordChangedAt.getTime() / 1000)) throw sessionEnded();
    if (claims.act) {
      // A `become` token lives only while the administrator behind it is active and still one.
      const actor = await em.findOne(User, { id: claims.act.sub });
      if (!actor || actor.status !== 'active' || !(actor.isAdministrator || actor.isSiteAdmin)) throw impersonationEnded();
    }
    return {
      principal: {
        kind: 'jwt',
        userId: user.id,
        user: toPrincipalUser(user),
        credentialId: claims.jti,
        ...(claims.act ? { actorId: claims.act.sub } : {}),
      },
      expiresAtMs: claims.exp * 1000,
    };
  }
}
