import { EntitySchema } from '@mikro-orm/core';

export type UserStatus = 'active' | 'disabled';

export class User {
  id!: string;
  /** Lower-cased; unique. */
  email!: string;
  /** Argon2id PHC string; null for accounts that cannot log in with a password. */
  passwordHash!: string | null;
  name!: string;
  avatarUrl!: string | null;
  phone!: string | null;
  profile!: Record<string, unknown> | null;
  status!: UserStatus;
  isSiteAdmin!: boolean;
  isDeveloper!: boolean;
  isAdministrator!: boolean;
  /** When the password last changed: JWTs issued before (in an earlier second) are refused. */
  passwordChangedAt?: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const UserSchema = new EntitySchema<User>({
  class: User,
  tableName: 'users',
  properties: {
    id: { type: 'uuid', primary: true },
    email: { type: 'string', length: 320, unique: true },
    passwordHash: { type: 'string', length: 255, nullable: true, lazy: false },
    name: { type: 'string', length: 200 },
    avatarUrl: { type: 'string', length: 2048, nullable: true },
    phone: { type: 'string', length: 64, nullable: true },
    profile: { type: 'json', nullable: true },
    status: { type: 'string', length: 16, default: 'active' },
    isSiteAdmin: { type: 'boolean', default: false },
    isDeveloper: { type: 'boolean', default: false },
    isAdministrator: { type: 'boolean', default: false },
    passwordChangedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
