import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { OAuthApp } from './oauth-app.entity.js';
import { OAuthTokenFamily, type RevocationReason } from './token-family.entity.js';

export type OAuthTokenKind = 'access' | 'refresh';

/**
 * An access (`toa_`) or refresh (`tor_`) token. Only the SHA-256 digest is stored. A rotated
 * refresh token keeps its row with `revokedReason = 'rotated'`, which is how a second use is
 * recognised as reuse (RFC 9700 §4.14.2).
 */
export class OAuthToken {
  id!: string;
  kind!: OAuthTokenKind;
  tokenHash!: string;
  tokenFamily!: OAuthTokenFamily;
  app!: OAuthApp;
  user!: User;
  scope!: string;
  expiresAt!: Date;
  revokedAt!: Date | null;
  revokedReason!: RevocationReason | null;
  lastUsedAt!: Date | null;
  lastUsedIp!: string | null;
  lastUsedUserAgent!: string | null;
  createdAt!: Date;
}

export const OAuthTokenSchema = new EntitySchema<OAuthToken>({
  class: OAuthToken,
  tableName: 'oauth_tokens',
  properties: {
    id: { type: 'uuid', primary: true },
    kind: { type: 'string', length: 16 },
    tokenHash: { type: 'string', length: 64, unique: true },
    tokenFamily: { kind: 'm:1', entity: () => OAuthTokenFamily, fieldName: 'token_family', deleteRule: 'cascade', index: true },
    app: { kind: 'm:1', entity: () => OAuthApp, deleteRule: 'cascade', index: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    scope: { type: 'string', length: 1000 },
    expiresAt: { type: 'datetime', index: true },
    revokedAt: { type: 'datetime', nullable: true },
    revokedReason: { type: 'string', length: 32, nullable: true },
    lastUsedAt: { type: 'datetime', nullable: true },
    lastUsedIp: { type: 'string', length: 64, nullable: true },
    lastUsedUserAgent: { type: 'string', length: 512, nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
