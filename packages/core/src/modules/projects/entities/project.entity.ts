import { EntitySchema } from '@mikro-orm/core';
import { Team, User } from '../../identity/index.js';

/**
 * Who may see and change a project besides its owner:
 * - `private`: the owner only;
 * - `team`: the owner and every member of the project's team (read, write, execute);
 * - `public`: as `team`, and every signed-in user may read.
 */
export const projectAccessLevels = ['private', 'team', 'public'] as const;
export type ProjectAccessLevel = (typeof projectAccessLevels)[number];

/** A project: the container of documents and blocks (workflow pages), with its file tree. */
export class Project {
  id!: string;
  name!: string;
  description!: string;
  template!: string | null;
  tools!: string[];
  access!: ProjectAccessLevel;
  owner!: User;
  team!: Team;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ProjectSchema = new EntitySchema<Project>({
  class: Project,
  tableName: 'projects',
  uniques: [{ properties: ['team', 'name'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    name: { type: 'string', length: 200 },
    description: { type: 'text', default: '' },
    template: { type: 'string', length: 100, nullable: true },
    tools: { type: 'json' },
    access: { type: 'string', length: 16 },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
