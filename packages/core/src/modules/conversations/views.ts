import type { Conversation } from './entities/conversation.entity.js';
import type { Message } from './entities/message.entity.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export const toConversationView = (c: Conversation) => ({
  id: c.id,
  ownerId: c.owner.id,
  name: c.name,
  botId: c.bot?.id ?? null,
  conf: c.conf,
  members: c.members,
  hdId: c.hdId ?? null,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
});

export const toMessageView = (m: Message) => ({
  id: m.id,
  convId: m.conversation.id,
  role: m.role,
  content: m.content,
  status: m.status,
  authorId: m.authorId,
  attrs: m.attrs ?? {},
  toolCalls: m.toolCalls,
  toolCallId: m.toolCallId,
  toolName: m.toolName,
  usage: m.usage,
  error: m.error,
  debug: m.debug,
  createdAt: m.createdAt.toISOString(),
  updatedAt: m.updatedAt.toISOString(),
});

export type MessageView = ReturnType<typeof toMessageView>;

export const conversationSchema = {
  type: 'object',
  required: ['id', 'ownerId', 'name', 'botId', 'conf', 'members', 'hdId', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    ownerId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    botId: nullable({ type: 'string', format: 'uuid' }),
    conf: { type: 'object', additionalProperties: true, description: 'title, description, and any other keys given.' },
    members: { type: 'array', items: { type: 'string' }, description: 'User ids; the creator first.' },
    hdId: nullable({ type: 'string' }),
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const messageSchema = {
  type: 'object',
  required: ['id', 'convId', 'role', 'content', 'status', 'authorId', 'attrs', 'toolCalls', 'toolCallId', 'toolName', 'usage', 'error', 'debug', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    convId: { type: 'string', format: 'uuid' },
    role: { enum: ['user', 'assistant', 'tool'] },
    content: { type: 'string' },
    status: { enum: ['completed', 'streaming', 'waiting_tool', 'error', 'stopped'] },
    authorId: nullable({ type: 'string', format: 'uuid' }),
    attrs: { type: 'object', properties: { stream: { type: 'boolean' }, tool_auto: { type: 'boolean' }, isDebug: { type: 'boolean' } } },
    toolCalls: nullable({
      type: 'array',
      items: { type: 'object', required: ['id', 'name', 'input'], properties: { id: { type: 'string' }, name: { type: 'string' }, input: {} } },
    }),
    toolCallId: nullable({ type: 'string' }),
    toolName: nullable({ type: 'string' }),
    usage: nullable({
      type: 'object',
      required: ['inputTokens', 'outputTokens', 'credits'],
      properties: { inputTokens: { type: 'integer' }, outputTokens: { type: 'integer' }, credits: { type: 'integer' } },
    }),
    error: nullable({ type: 'object', required: ['error', 'message'], properties: { error: { type: 'string' }, message: { type: 'string' }, retry_after: { type: 'number', description: 'Seconds to wait before trying again (ai_rate_limited).' } } }),
    debug: nullable({ type: 'object', additionalProperties: true }),
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const turnSchema = {
  type: 'object',
  required: ['convId', 'status', 'messages'],
  properties: {
    convId: { type: 'string', format: 'uuid' },
    status: { enum: ['streaming', 'completed', 'waiting_tool', 'step_limit', 'stopped'] },
    messages: { type: 'array', items: messageSchema, description: 'Messages this call created, oldest first.' },
    turnId: { type: 'string', format: 'uuid', description: 'The turn this call started.' },
    after: { type: 'integer', minimum: 0, description: "The conversation's last event before this turn: `GET /conversation/{convId}/events?after=` follows the turn from its first event." },
  },
};

export const pageSchema = (item: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: item }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});
