import { EntitySchema } from '@mikro-orm/core';
import { User } from './user.entity.js';

export type TeamRole = 'owner' | 'admin' | 'member';
export const teamRoles: readonly TeamRole[] = ['owner', 'admin', 'member'];

export class Team {
  id!: string;
  name!: string;
  /** The one-person team every user gets at registration. It cannot gain members or be deleted. */
  personal!: boolean;
  /**
   * Set when the team is deleted: its members and projects are gone, but the row stays so that its
   * financial records (orders, the credit ledger, the subscription, the balance) outlive it.
   */
  deletedAt?: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export class TeamMember {
  id!: string;
  team!: Team;
  user!: User;
  role!: TeamRole;
  createdAt!: Date;
}

export const TeamSchema = new EntitySchema<Team>({
  class: Team,
  tableName: 'teams',
  properties: {
    id: { type: 'uuid', primary: true },
    name: { type: 'string', length: 200 },
    personal: { type: 'boolean', default: false },
    deletedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

export const TeamMemberSchema = new EntitySchema<TeamMember>({
  class: TeamMember,
  tableName: 'team_members',
  uniques: [{ properties: ['team', 'user'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    user: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    role: { type: 'string', length: 16 },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
