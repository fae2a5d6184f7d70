import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/**
 * An anonymous sign-in of the tool service: a client-chosen identifier and password, bound to a
 * real (password-less) Trellis user with a personal team, so everything the anonymous user stores
 * belongs to that user. Upgrading gives the same user an email and password; `upgradedAt` then ends
 * anonymous sign-in for the identifier.
 */
export class AnonymousAccount {
  id!: string;
  identifier!: string;
  user!: User;
  passwordHash!: string;
  upgradedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const AnonymousAccountSchema = new EntitySchema<AnonymousAccount>({
  class: AnonymousAccount,
  tableName: 'tool_anonymous_accounts',
  properties: {
    id: { type: 'uuid', primary: true },
    identifier: { type: 'string', length: 128, unique: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    passwordHash: { type: 'string', length: 255 },
    upgradedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
