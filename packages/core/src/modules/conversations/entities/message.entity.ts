import { EntitySchema } from '@mikro-orm/core';
import { Conversation } from './conversation.entity.js';

export type MessageRole = 'user' | 'assistant' | 'tool';
/** `completed`; `streaming` while an answer is written; `waiting_tool` until every tool call has an answer; `error`; `stopped` (by the stop endpoint: the text written until then). */
export type MessageStatus = 'completed' | 'streaming' | 'waiting_tool' | 'error' | 'stopped';

export interface MessageToolCall {
  id: string;
  name: string;
  input: unknown;
}

export interface MessageAttrs {
  stream?: boolean;
  tool_auto?: boolean;
  isDebug?: boolean;
}

/** One message of a conversation: a user's text, a model's answer (with tool calls), or a tool result. */
export class Message {
  id!: string;
  conversation!: Conversation;
  role!: MessageRole;
  content!: string;
  status!: MessageStatus;
  /** The user who wrote it (user and tool-answer messages), else null. */
  authorId!: string | null;
  attrs!: MessageAttrs;
  /** Tool calls of an assistant message. */
  toolCalls!: MessageToolCall[] | null;
  /** The call a tool message answers. */
  toolCallId!: string | null;
  toolName!: string | null;
  /** Tokens and credits of the model call that wrote an assistant message. */
  usage!: { inputTokens: number; outputTokens: number; credits: number } | null;
  /** Why an assistant message failed: the error body its members were sent (with `retry_after` for a rate limit). */
  error!: { error: string; message: string; retry_after?: number } | null;
  /** With `isDebug`: what was sent to the model. */
  debug!: Record<string, unknown> | null;
  /** The lease of a `streaming` message: renewed by the process writing it; a stale one means that process went away. */
  heartbeatAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const MessageSchema = new EntitySchema<Message>({
  class: Message,
  tableName: 'messages',
  indexes: [{ properties: ['conversation', 'createdAt'] }, { properties: ['status', 'heartbeatAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    conversation: { kind: 'm:1', entity: () => Conversation, deleteRule: 'cascade' },
    role: { type: 'string', length: 16 },
    content: { type: 'text' },
    status: { type: 'string', length: 16 },
    authorId: { type: 'uuid', nullable: true },
    attrs: { type: 'json' },
    toolCalls: { type: 'json', nullable: true },
    toolCallId: { type: 'string', length: 128, nullable: true },
    toolName: { type: 'string', length: 128, nullable: true },
    usage: { type: 'json', nullable: true },
    error: { type: 'json', nullable: true },
    debug: { type: 'json', nullable: true },
    heartbeatAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
