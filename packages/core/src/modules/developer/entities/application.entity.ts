import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/** An application registered by a developer. It connects to `/v3/wss/{id}` with its device token. */
export class Application {
  id!: string;
  owner!: User;
  name!: string;
  description!: string | null;
  config!: Record<string, unknown>;
  /** SHA-256 of the application's token (`tdv_`); null when none is issued. */
  tokenHash!: string | null;
  tokenPrefix!: string | null;
  tokenIssuedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ApplicationSchema = new EntitySchema<Application>({
  class: Application,
  tableName: 'applications',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    description: { type: 'text', nullable: true },
    config: { type: 'json' },
    tokenHash: { type: 'string', length: 64, nullable: true, unique: true },
    tokenPrefix: { type: 'string', length: 16, nullable: true },
    tokenIssuedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
