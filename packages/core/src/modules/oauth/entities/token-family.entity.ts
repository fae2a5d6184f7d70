import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { OAuthApp } from './oauth-app.entity.js';

/**
 * Why a token or family ended: `rotated` (a refresh token exchanged for a new one), `revoked`
 * (RFC 7009 revocation), `reuse_detected` / `code_reuse` (a rotated token or used code presented
 * again), `app_changed` / `app_disabled` / `app_deleted` (administration of the app).
 */
export type RevocationReason = 'rotated' | 'revoked' | 'reuse_detected' | 'code_reuse' | 'app_changed' | 'app_disabled' | 'app_deleted';

/**
 * One authorization and every token rotated from it (`token_family`). Revoking the family ends
 * all its tokens at once, including any a concurrent rotation is writing: a token is valid only
 * while its family is.
 */
export class OAuthTokenFamily {
  id!: string;
  app!: OAuthApp;
  user!: User;
  scope!: string;
  appEpoch!: number;
  /** Absolute end of the family (`oauth.familyLifetimeSeconds`), or null. */
  expiresAt!: Date | null;
  revokedAt!: Date | null;
  revokedReason!: RevocationReason | null;
  createdAt!: Date;
}

export const OAuthTokenFamilySchema = new EntitySchema<OAuthTokenFamily>({
  class: OAuthTokenFamily,
  tableName: 'oauth_token_families',
  properties: {
    id: { type: 'uuid', primary: true },
    app: { kind: 'm:1', entity: () => OAuthApp, deleteRule: 'cascade', index: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    scope: { type: 'string', length: 1000 },
    appEpoch: { type: 'integer' },
    expiresAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    revokedReason: { type: 'string', length: 32, nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
