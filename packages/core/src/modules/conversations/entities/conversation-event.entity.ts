import { EntitySchema } from '@mikro-orm/core';
import { Conversation } from './conversation.entity.js';

/** The types of a conversation's events: the `conversation` notification's, and `turn-end` (log and SSE only). */
export type ConversationEventType = 'message-start' | 'delta' | 'tool-call' | 'tool-result' | 'end' | 'error' | 'turn-end';

/** One event of a conversation's log, numbered at the source: `seq` rises by one per event of the conversation. */
export interface ConversationEventRecord {
  seq: number;
  type: ConversationEventType;
  turnId: string;
  msgId: string;
  content: unknown;
}

/**
 * A batch of consecutive events of one conversation's log (`seq` to `lastSeq`), written together.
 * Only the process running the conversation's turn writes (one turn at a time, held on the
 * conversation row), so numbers are made without asking the database.
 */
export class ConversationEventBatch {
  id!: string;
  conversation!: Conversation;
  seq!: number;
  lastSeq!: number;
  events!: ConversationEventRecord[];
  createdAt!: Date;
}

export const ConversationEventBatchSchema = new EntitySchema<ConversationEventBatch>({
  class: ConversationEventBatch,
  tableName: 'conversation_events',
  uniques: [{ properties: ['conversation', 'seq'] }],
  indexes: [{ properties: ['conversation', 'lastSeq'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    conversation: { kind: 'm:1', entity: () => Conversation, deleteRule: 'cascade' },
    seq: { type: 'integer' },
    lastSeq: { type: 'integer' },
    events: { type: 'json' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
