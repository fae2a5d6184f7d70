import { inject, injectable } from 'inversify';
import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { sha256Hex } from '../../../kernel/crypto.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { oauthConfigServiceIdentifier, type OAuthConfig } from '../config.js';
import { InvalidToken } from '../oauth-errors.js';
import { findAccessToken, touchTokenUse } from '../queries.js';
import { ACCESS_TOKEN_PREFIX } from '../token-prefixes.js';

const invalid = () => new InvalidToken('The access token is unknown, expired or revoked.');

/**
 * OAuth access tokens (`toa_`) for the combined authenticator: the principal carries the token's
 * scopes and client, so routes accept it only for the scopes it holds. A token is valid while it,
 * its family and its app are live and its user is active (one prepared statement reads all four).
 * last_used_* are written at most every `oauth.auditWriteIntervalSeconds`.
 */
@injectable()
export class OAuthAccessTokenVerifier implements CredentialVerifier {
  readonly kind = 'oauth' as const;

  constructor(
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(oauthConfigServiceIdentifier) private readonly config: OAuthConfig,
  ) {}

  accepts(token: string): boolean {
    return token.startsWith(ACCESS_TOKEN_PREFIX);
  }

  async verify(token: string, meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs: number }> {
    const row = await findAccessToken(this.sql, sha256Hex(token));
    const now = this.clock.nowMs();
    if (!row || row.revokedAt || row.expiresAt.getTime() <= now) throw invalid();
    const { family, app, user } = row;
    if (family.revokedAt || (family.expiresAt && family.expiresAt.getTime() <= now)) throw invalid();
    if (family.appEpoch !== app.tokenEpoch || app.disabledAt || app.deletedAt) throw invalid();
    if (user.status !== 'active') throw new InvalidToken('The token belongs to no active user.');
    if (!row.lastUsedAt || now - row.lastUsedAt.getTime() >= this.config.auditWriteIntervalSeconds * 1000) {
      // Best effort and throttled: an audit write never fails or slows the request.
      void touchTokenUse(this.sql, row.id, new Date(now), meta.ip.slice(0, 64), meta.userAgent.slice(0, 512)).catch(() => undefined);
    }
    return {
      principal: {
        kind: 'oauth',
        userId: user.id,
        user,
        scopes: row.scope.split(' '),
        credentialId: row.id,
        clientId: app.clientId,
      },
      expiresAtMs: row.expiresAt.getTime(),
    };
  }
}
