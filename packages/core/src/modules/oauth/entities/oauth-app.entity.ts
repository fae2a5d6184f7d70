import { EntitySchema } from '@mikro-orm/core';

/**
 * A client application registered by a site administrator. Public clients only: they prove
 * possession with PKCE, not with a secret. Soft-deleted (`deletedAt`) and disabled (`disabledAt`)
 * apps cannot authorize or use tokens. `tokenEpoch` grows each time every token of the app is
 * revoked; codes and token families from an older epoch are dead.
 */
export class OAuthApp {
  id!: string;
  clientId!: string;
  name!: string;
  description!: string;
  redirectUris!: string[];
  scopes!: string[];
  homepageUrl!: string | null;
  logoUrl!: string | null;
  tokenEpoch!: number;
  disabledAt!: Date | null;
  deletedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const OAuthAppSchema = new EntitySchema<OAuthApp>({
  class: OAuthApp,
  tableName: 'oauth_apps',
  properties: {
    id: { type: 'uuid', primary: true },
    clientId: { type: 'string', length: 64, unique: true },
    name: { type: 'string', length: 200 },
    description: { type: 'text' },
    redirectUris: { type: 'json' },
    scopes: { type: 'json' },
    homepageUrl: { type: 'string', length: 2048, nullable: true },
    logoUrl: { type: 'string', length: 2048, nullable: true },
    tokenEpoch: { type: 'integer', default: 0 },
    disabledAt: { type: 'datetime', nullable: true },
    deletedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
