import type { MikroORM } from '@mikro-orm/core';
import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Clock } from '../../../ports/clock.js';
import { AccessKey, type AccessKeyKind } from '../entities/access-key.entity.js';
import { accessKeyPrefixes, type AccessKeyService } from '../services/access-key.service.js';
import { toPrincipalUser } from '../views.js';
import { unknownCredential, unknownOrDisabledUser } from './errors.js';

/** `last_used_at` is written at most this often per credential, not on every request. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/** API keys (`trk_`) and agent tokens (`tra_`): looked up by SHA-256 digest. */
export class AccessKeyVerifier implements CredentialVerifier {
  private readonly prefix: string;

  constructor(
    readonly kind: AccessKeyKind,
    private readonly keys: AccessKeyService,
    private readonly orm: MikroORM,
    private readonly clock: Clock,
  ) {
    this.prefix = accessKeyPrefixes[kind];
  }

  accepts(token: string): boolean {
    return token.startsWith(this.prefix);
  }

  async verify(token: string, meta: CredentialMeta): Promise<{ principal: Principal; expiresAtMs?: number }> {
    const em = this.orm.em.fork();
    const key = await this.keys.findActive(em, token);
    if (!key) throw unknownCredential();
    if (key.user.status !== 'active') throw unknownOrDisabledUser();
    const now = this.clock.nowMs();
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_WRITE_INTERVAL_MS) {
      // Best effort: a failed audit write must not fail the request.
      void em
        .nativeUpdate(AccessKey, { id: key.id }, { lastUsedAt: new Date(now), lastUsedIp: meta.ip.slice(0, 64) })
        .catch(() => undefined);
    }
    return {
      principal: {
        kind: this.kind,
        userId: key.user.id,
        user: toPrincipalUser(key.user),
        credentialId: key.id,
        ...(key.scopes ? { scopes: key.scopes } : {}),
      },
      ...(key.expiresAt ? { expiresAtMs: key.expiresAt.getTime() } : {}),
    };
  }
}
