import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { AnonymousAccount } from './anonymous-account.entity.js';

export type AnonymousTokenKind = 'access' | 'refresh';

/**
 * An anonymous access or refresh token (`tan_`, opaque, stored as its SHA-256 digest). Tokens of
 * one sign-in and all its rotations share a `family`; reusing a rotated refresh token revokes the
 * whole family.
 */
export class AnonymousToken {
  id!: string;
  account!: AnonymousAccount;
  user!: User;
  family!: string;
  kind!: AnonymousTokenKind;
  tokenHash!: string;
  expiresAt!: Date;
  /** When a refresh token was exchanged (single use). */
  usedAt!: Date | null;
  revokedAt!: Date | null;
  createdAt!: Date;
}

export const AnonymousTokenSchema = new EntitySchema<AnonymousToken>({
  class: AnonymousToken,
  tableName: 'tool_anonymous_tokens',
  indexes: [{ properties: ['family'] }, { properties: ['expiresAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    account: { kind: 'm:1', entity: () => AnonymousAccount, deleteRule: 'cascade', index: true },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    family: { type: 'uuid' },
    kind: { type: 'string', length: 16 },
    tokenHash: { type: 'string', length: 64, unique: true },
    expiresAt: { type: 'datetime' },
    usedAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
