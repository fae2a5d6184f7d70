import { dateTime, jsonObject, nullable, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { Conversation } from './entities/conversation.entity.js';
import type { Message } from './entities/message.entity.js';

/** The conversation responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
export const conversationSchema = Type.Object({
  id: uuid(),
  ownerId: uuid(),
  name: Type.String(),
  botId: nullable(uuid()),
  conf: jsonObject({ additionalProperties: true, description: 'title, description, and any other keys given.' }),
  members: Type.Array(Type.String(), { description: 'User ids; the creator first.' }),
  hdId: nullable(Type.String()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type ConversationView = Static<typeof conversationSchema>;

export const messageSchema = Type.Object({
  id: uuid(),
  convId: uuid(),
  role: stringEnum(['user', 'assistant', 'tool']),
  content: Type.String(),
  status: stringEnum(['completed', 'streaming', 'waiting_tool', 'error', 'stopped']),
  authorId: nullable(uuid()),
  attrs: Type.Object({ stream: Type.Optional(Type.Boolean()), tool_auto: Type.Optional(Type.Boolean()), isDebug: Type.Optional(Type.Boolean()) }),
  toolCalls: nullable(Type.Array(Type.Object({ id: Type.String(), name: Type.String(), input: Type.Unknown() }))),
  toolCallId: nullable(Type.String()),
  toolName: nullable(Type.String()),
  usage: nullable(Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer(), credits: Type.Integer() })),
  error: nullable(
    Type.Object({
      error: Type.String(),
      message: Type.String(),
      retry_after: Type.Optional(Type.Number({ description: 'Seconds to wait before trying again (ai_rate_limited).' })),
    }),
  ),
  debug: nullable(jsonObject({ additionalProperties: true })),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type MessageView = Static<typeof messageSchema>;

export const turnSchema = Type.Object({
  convId: uuid(),
  status: stringEnum(['streaming', 'completed', 'waiting_tool', 'step_limit', 'stopped']),
  messages: Type.Array(messageSchema, { description: 'Messages this call created, oldest first.' }),
  turnId: Type.Optional(uuid({ description: 'The turn this call started.' })),
  after: Type.Optional(
    Type.Integer({ minimum: 0, description: "The conversation's last event before this turn: `GET /conversation/{convId}/events?after=` follows the turn from its first event." }),
  ),
});
export type TurnView = Static<typeof turnSchema>;

export const turnStopSchema = Type.Object({ convId: uuid(), turnId: uuid(), status: stringEnum(['stopped', 'stopping']) });
export type TurnStopView = Static<typeof turnStopSchema>;

export const toolExecutionSchema = Type.Object({
  toolId: uuid(),
  hook: Type.String(),
  result: Type.Unknown({ description: 'What the action returned (JSON).' }),
  message: nullable(messageSchema),
});
export type ToolExecutionView = Static<typeof toolExecutionSchema>;

/** The SSE frames of `GET /conversation/{convId}/events`. */
export const conversationEventStreamSchema = Type.String({ description: 'SSE frames `id: <seq>`, `event: <type>`, `data: {seq, type, turnId, msgId, convId, content}`.' });

export const toConversationView = (c: Conversation): ConversationView => ({
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

export const toMessageView = (m: Message): MessageView => ({
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
