import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import { generateOpaqueToken, sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { authenticatorServiceIdentifier, hooksServiceIdentifier, kernelServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { AccessKey, type AccessKeyKind } from '../entities/access-key.entity.js';
import { User } from '../entities/user.entity.js';

export const accessKeyPrefixes: Readonly<Record<AccessKeyKind, string>> = { api_key: 'trk_', agent_token: 'tra_' };

/** Active credentials a user may hold of one kind. */
const MAX_ACTIVE_PER_KIND = 100;

export interface IssueAccessKeyInput {
  name: string;
  scopes?: string[];
  expiresInDays?: number;
}

/** API keys and agent tokens: issued once in clear, stored as SHA-256, listed without the secret. */
@injectable()
export class AccessKeyService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(kernelServiceIdentifier) private readonly kernel: Kernel,
  ) {}

  private knownScopes?: ReadonlySet<string>;

  /** Scope names a credential can use: those some route lists, and `auth.fullAccessScopes`. */
  scopeNames(): ReadonlySet<string> {
    return (this.knownScopes ??= new Set([...this.kernel.routes.flatMap((route) => route.scopes ?? []), ...this.kernel.config.auth.fullAccessScopes]));
  }

  async issue(em: EntityManager, userId: string, kind: AccessKeyKind, input: IssueAccessKeyInput): Promise<{ key: AccessKey; token: string }> {
    const unknown = [...new Set(input.scopes ?? [])].filter((scope) => !this.scopeNames().has(scope));
    if (unknown.length) {
      const known = [...this.scopeNames()].sort().join(', ');
      throw new TrellisError('validation', 'unknown_scope', `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; known scopes: ${known}.`, {
        details: unknown.map((scope) => ({ field: 'scopes', constraint: 'unknown_scope', message: `"${scope}" is not a scope any route accepts` })),
      });
    }
    const active = await em.count(AccessKey, { user: userId, kind, revokedAt: null });
    if (active >= MAX_ACTIVE_PER_KIND) {
      throw new TrellisError('conflict', 'too_many_credentials', `You already hold ${MAX_ACTIVE_PER_KIND} active credentials of this kind; revoke one first.`);
    }
    const token = generateOpaqueToken(accessKeyPrefixes[kind]);
    const now = this.clock.nowMs();
    const key = em.create(AccessKey, {
      id: this.ids.next(),
      user: em.getReference(User, userId),
      kind,
      name: input.name,
      tokenHash: sha256Hex(token),
      prefix: token.slice(0, 12),
      scopes: input.scopes ?? null,
      expiresAt: input.expiresInDays ? new Date(now + input.expiresInDays * 86_400_000) : null,
      lastUsedAt: null,
      lastUsedIp: null,
      revokedAt: null,
      createdAt: new Date(now),
    } as AccessKey);
    await em.flush();
    return { key, token };
  }

  list(em: EntityManager, userId: string, kind: AccessKeyKind): Promise<AccessKey[]> {
    return em.find(AccessKey, { user: userId, kind }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  /** Revokes a credential of the caller; revoking twice is harmless. */
  async revoke(em: EntityManager, userId: string, kind: AccessKeyKind, id: string): Promise<AccessKey> {
    const key = await em.findOne(AccessKey, { id, user: userId, kind });
    if (!key) throw new TrellisError('not_found', 'credential_not_found', 'No such credential.');
    if (!key.revokedAt) {
      key.revokedAt = this.clock.now();
      await em.flush();
      this.authenticator.invalidateWhere((principal) => principal.credentialId === id);
      await this.hooks.emit('credential.revoked', { userId, credentialId: id });
    }
    return key;
  }

  /** The live credential for a presented token, with its user, or null. */
  async findActive(em: EntityManager, token: string): Promise<AccessKey | null> {
    const key = await em.findOne(AccessKey, { tokenHash: sha256Hex(token) }, { populate: ['user'] });
    if (!key || key.revokedAt) return null;
    if (key.expiresAt && key.expiresAt.getTime() <= this.clock.nowMs()) return null;
    return key;
  }
}
