import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { Bot } from '../../bots/index.js';

/** A conversation's configuration: the spec names `title` and `description`; other keys are kept as given. */
export interface ConversationConf {
  title?: string;
  description?: string;
  [key: string]: unknown;
}

/**
 * A conversation (spec: name, botId, conf {title, description}, members). One entity serves the
 * conversations area and the developer API (`/dev/conv`, which maps `title` and `description` to
 * `conf.title` and `conf.description`, and `config` to `conf`).
 */
export class Conversation {
  id!: string;
  owner!: User;
  name!: string;
  /** The bot that answers in this conversation; deleting the bot deletes its conversations. */
  bot!: Bot | null;
  conf!: ConversationConf;
  /** User ids; by default the creator only. */
  members!: string[];
  /** The hardware device the conversation belongs to (`GET /conversation?hdId=`), or null. */
  hdId!: string | null;
  /** The turn answering now, held by one host process at a time (null: none). */
  turnId!: string | null;
  /** The lease of `turnId`, renewed while the turn runs; a stale one means its process went away. */
  turnHeartbeatAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ConversationSchema = new EntitySchema<Conversation>({
  class: Conversation,
  tableName: 'conversations',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    bot: { kind: 'm:1', entity: () => Bot, nullable: true, deleteRule: 'cascade', index: true },
    conf: { type: 'json' },
    members: { type: 'json' },
    hdId: { type: 'string', length: 128, nullable: true, default: null },
    turnId: { type: 'uuid', nullable: true, default: null },
    turnHeartbeatAt: { type: 'datetime', nullable: true, default: null },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
