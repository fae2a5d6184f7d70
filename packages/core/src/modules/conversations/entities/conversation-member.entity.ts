import { EntitySchema } from '@mikro-orm/core';
import { Conversation } from './conversation.entity.js';

/**
 * One member of a conversation besides its owner: the queryable mirror of `Conversation.members`
 * (a JSON list cannot be searched portably). The owner is always a member without a row.
 */
export class ConversationMember {
  id!: string;
  conversation!: Conversation;
  userId!: string;
  createdAt!: Date;
}

export const ConversationMemberSchema = new EntitySchema<ConversationMember>({
  class: ConversationMember,
  tableName: 'conversation_members',
  uniques: [{ properties: ['conversation', 'userId'] }],
  indexes: [{ properties: ['userId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    conversation: { kind: 'm:1', entity: () => Conversation, deleteRule: 'cascade' },
    userId: { type: 'uuid' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
