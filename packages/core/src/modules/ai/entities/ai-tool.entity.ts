import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/** One action a tool offers (spec: name, type, conf). */
export interface AiToolAction {
  name: string;
  type: string;
  conf?: Record<string, unknown>;
}

/**
 * An AI tool (spec: name, desc, service, conf, actions). One entity serves the AI area and the
 * developer API (`/dev/tool`, which maps `description` to `desc` and `config` to `conf`).
 */
export class AiTool {
  id!: string;
  owner!: User;
  name!: string;
  desc!: string | null;
  service!: string | null;
  conf!: Record<string, unknown>;
  actions!: AiToolAction[];
  createdAt!: Date;
  updatedAt!: Date;
}

export const AiToolSchema = new EntitySchema<AiTool>({
  class: AiTool,
  tableName: 'ai_tools',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    desc: { type: 'text', nullable: true },
    service: { type: 'string', length: 64, nullable: true },
    conf: { type: 'json' },
    actions: { type: 'json' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
