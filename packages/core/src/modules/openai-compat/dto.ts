import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsNumber, IsObject, IsOptional, IsString, Length, Max, Min } from 'class-validator';
import { Doc, Nested, Schema } from '../../kernel/http/docs-metadata.js';

@Schema({ name: 'ChatCompletionStreamOptions' })
export class StreamOptions {
  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Send one more chunk before `data: [DONE]` with the usage of the whole request and no choices.' })
  include_usage?: boolean;
}

const messageSchema = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
    content: { description: 'Text, an array of `{type: "text", text}` parts, or null (an assistant message with tool calls).' },
    tool_calls: { type: 'array', items: { type: 'object' } },
    tool_call_id: { type: 'string' },
  },
  additionalProperties: true,
};

const toolSchema = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, description: { type: 'string' }, parameters: { type: 'object' } } },
  },
};

/** `POST /v1/chat/completions`: the OpenAI request fields Trellis reads; others are ignored. */
@Schema({ name: 'ChatCompletionRequest', description: 'An OpenAI chat completion request. Fields not listed are accepted and ignored.' })
export class ChatCompletionBody {
  @IsString()
  @Length(1, 200)
  @Doc({ description: '`bot:<botId>` or `block:<blockId>` (optionally `block:<blockId>@<version>`); see `GET /v1/models`.', example: 'bot:0193a2c4-0000-7000-8000-000000000000' })
  model!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsObject({ each: true })
  @Doc({ description: 'The conversation so far, oldest first.', schema: { items: messageSchema } })
  messages!: Record<string, unknown>[];

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'true: answer as server-sent `chat.completion.chunk` events ending with `data: [DONE]`.' })
  stream?: boolean;

  @IsOptional()
  @Nested(() => StreamOptions)
  stream_options?: StreamOptions;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(128)
  @IsObject({ each: true })
  @Doc({ description: 'Functions the model may call (bots only): passed to the model; its calls come back as `tool_calls` for the client to run.', schema: { items: toolSchema } })
  tools?: Record<string, unknown>[];

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(2)
  temperature?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;
}
