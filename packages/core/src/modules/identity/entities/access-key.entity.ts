import { EntitySchema } from '@mikro-orm/core';
import { User } from './user.entity.js';

export type AccessKeyKind = 'api_key' | 'agent_token';

/** An API key (`trk_`) or agent token (`tra_`). Only the SHA-256 digest of the token is stored. */
export class AccessKey {
  id!: string;
  user!: User;
  kind!: AccessKeyKind;
  name!: string;
  tokenHash!: string;
  /** The first characters of the token, shown in lists so a user can recognise it. */
  prefix!: string;
  scopes!: string[] | null;
  expiresAt!: Date | null;
  lastUsedAt!: Date | null;
  lastUsedIp!: string | null;
  revokedAt!: Date | null;
  createdAt!: Date;
}

export const AccessKeySchema = new EntitySchema<AccessKey>({
  class: AccessKey,
  tableName: 'access_keys',
  properties: {
    id: { type: 'uuid', primary: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    kind: { type: 'string', length: 16 },
    name: { type: 'string', length: 200 },
    tokenHash: { type: 'string', length: 64, unique: true },
    prefix: { type: 'string', length: 16 },
    scopes: { type: 'json', nullable: true },
    expiresAt: { type: 'datetime', nullable: true },
    lastUsedAt: { type: 'datetime', nullable: true },
    lastUsedIp: { type: 'string', length: 64, nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
