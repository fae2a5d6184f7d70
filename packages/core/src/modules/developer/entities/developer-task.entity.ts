import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/** A task definition managed through the developer API (spec: name, description, config). */
export class DeveloperTask {
  id!: string;
  owner!: User;
  name!: string;
  description!: string | null;
  config!: Record<string, unknown>;
  createdAt!: Date;
  updatedAt!: Date;
}

export const DeveloperTaskSchema = new EntitySchema<DeveloperTask>({
  class: DeveloperTask,
  tableName: 'developer_tasks',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    description: { type: 'text', nullable: true },
    config: { type: 'json' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
