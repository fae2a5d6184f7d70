import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/** A bot's configuration: the spec names `avatar`, `desc` and `modelId`; other keys are kept as given. */
export interface BotConf {
  avatar?: string;
  desc?: string;
  modelId?: string;
  [key: string]: unknown;
}

/**
 * A bot (spec: name, conf {avatar, desc, modelId}). One entity serves the bots area and the
 * developer API (`/dev/bot`, which maps `description` to `conf.desc` and `config` to `conf`).
 */
export class Bot {
  id!: string;
  owner!: User;
  name!: string;
  conf!: BotConf;
  createdAt!: Date;
  updatedAt!: Date;
}

export const BotSchema = new EntitySchema<Bot>({
  class: Bot,
  tableName: 'bots',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    conf: { type: 'json' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
