import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { OAuthApp } from './oauth-app.entity.js';

/**
 * A single-use authorization code (RFC 6749 §4.1.2), bound to the client, the redirect URI, the
 * PKCE challenge, the scope and the user. Only its SHA-256 digest is stored. `tokenFamilyId` is
 * chosen when the code is issued, so a replayed code can revoke exactly what it issued.
 */
export class OAuthAuthorizationCode {
  id!: string;
  codeHash!: string;
  app!: OAuthApp;
  user!: User;
  redirectUri!: string;
  codeChallenge!: string;
  scope!: string;
  tokenFamilyId!: string;
  appEpoch!: number;
  expiresAt!: Date;
  consumedAt!: Date | null;
  createdAt!: Date;
}

export const OAuthAuthorizationCodeSchema = new EntitySchema<OAuthAuthorizationCode>({
  class: OAuthAuthorizationCode,
  tableName: 'oauth_authorization_codes',
  properties: {
    id: { type: 'uuid', primary: true },
    codeHash: { type: 'string', length: 64, unique: true },
    app: { kind: 'm:1', entity: () => OAuthApp, deleteRule: 'cascade', index: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    redirectUri: { type: 'string', length: 2048 },
    codeChallenge: { type: 'string', length: 128 },
    scope: { type: 'string', length: 1000 },
    tokenFamilyId: { type: 'uuid' },
    appEpoch: { type: 'integer' },
    expiresAt: { type: 'datetime', index: true },
    consumedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
