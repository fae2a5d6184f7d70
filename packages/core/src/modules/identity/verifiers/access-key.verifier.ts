import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { sha256Hex } from '../../../kernel/crypto.js';
import type { Clock } from '../../../ports/clock.js';
import type { PreparedStatements } from '../../../ports/database.js';
import type { AccessKeyKind } from '../entities/access-key.entity.js';
import { findAccessKey, touchAccessKeyUse } from '../queries.js';
import { accessKeyPrefixes } from '../services/access-key.service.js';
import { unknownCredential, unknownOrDisabledUser } from './errors.js';

/** `last_used_at` is written at most this often per credential, not on every request. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/** API keys (`trk_`) and agent tokens (`tra_`): looked up by SHA-256 digest with a prepared statement. */
export class AccessKeyVerifier implements CredentialVerifier {
  private readonly prefix: string;

  constructor(
    readonly kind: AccessKeyKind,
    private readonly sql: PreparedStatements,
    private readonly clock: Clock,
  ) {
    this.prefix = accessKeyPrefixes[kind];
  }

  accepts(token: string): boolean {
    return token.startsWith(this.prefix);
  }

  async verify(token: string, meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs?: number }> {
    const key = await findAccessKey(this.sql, sha256Hex(token));
    const now = this.clock.nowMs();
    if (!key || key.revokedAt || (key.expiresAt && key.expiresAt.getTime() <= now)) throw unknownCredential();
    if (key.user.status !== 'active') throw unknownOrDisabledUser();
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_WRITE_INTERVAL_MS) {
      // Best effort: a failed audit write must not fail the request.
      void touchAccessKeyUse(this.sql, key.id, new Date(now), meta.ip.slice(0, 64)).catch(() => undefined);
    }
    return {
      principal: {
        kind: this.kind,
        userId: key.user.id,
        user: key.user,
        credentialId: key.id,
        ...(key.scopes ? { scopes: key.scopes } : {}),
      },
      ...(key.expiresAt ? { expiresAtMs: key.expiresAt.getTime() } : {}),
    };
  }
}
