/** The OpenAI-compatible responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { nullable, stringEnum, Type, type Static } from '../../kernel/http/response-schema.js';

const usageSchema = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });

const toolCallSchema = Type.Object({
  id: Type.String(),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});

export const chatCompletionSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message: Type.Object({ role: Type.Literal('assistant'), content: nullable(Type.String()), tool_calls: Type.Optional(Type.Array(toolCallSchema)) }),
      finish_reason: stringEnum(['stop', 'length', 'tool_calls', 'content_filter']),
    }),
  ),
  usage: Type.Optional(usageSchema),
});
export type ChatCompletionView = Static<typeof chatCompletionSchema>;

/** The streamed variant of a chat completion. */
export const chatCompletionStreamSchema = Type.String({ description: '`data: <chat.completion.chunk JSON>` events, then `data: [DONE]`.' });

export const modelEntrySchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('model'),
  created: Type.Integer(),
  owned_by: Type.String(),
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
});
export type ModelEntry = Static<typeof modelEntrySchema>;

export const modelListSchema = Type.Object({ object: Type.Literal('list'), data: Type.Array(modelEntrySchema) });
