import type { MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { sha256Hex } from '../../../kernel/crypto.js';
import { ormServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { unknownCredential, unknownOrDisabledUser, toPrincipalUser } from '../../identity/index.js';
import { AnonymousToken } from '../entities/anonymous-token.entity.js';
import { ANONYMOUS_TOKEN_PREFIX } from '../services/anonymous-auth.service.js';

/** Anonymous access tokens (`tan_`) for the combined authenticator: principal kind `anonymous`. */
@injectable()
export class AnonymousTokenVerifier implements CredentialVerifier {
  readonly kind = 'anonymous' as const;

  constructor(
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  accepts(token: string): boolean {
    return token.startsWith(ANONYMOUS_TOKEN_PREFIX);
  }

  async verify(token: string): Promise<{ principal: Principal; expiresAtMs: number }> {
    const row = await this.orm.em.fork().findOne(AnonymousToken, { tokenHash: sha256Hex(token), kind: 'access' }, { populate: ['user'] });
    if (!row || row.revokedAt || row.expiresAt.getTime() <= this.clock.nowMs()) throw unknownCredential();
    if (row.user.status !== 'active') throw unknownOrDisabledUser();
    return { principal: { kind: 'anonymous', userId: row.user.id, user: toPrincipalUser(row.user), credentialId: row.id }, expiresAtMs: row.expiresAt.getTime() };
  }
}
