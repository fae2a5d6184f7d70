import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsObject, Max, Min, IsOptional, IsString, IsUUID, Length, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const present = (_: object, value: unknown) => value !== undefined;
const confDoc = { description: '`title`, `description`, and any other keys (a JSON object).', schema: { type: 'object', additionalProperties: true } };
export const MAX_CONTENT = 100_000;

export class ConversationParams {
  @IsUUID('all')
  convId!: string;
}

export class TurnParams extends ConversationParams {
  @IsUUID('all')
  turnId!: string;
}

export class MessageParams extends ConversationParams {
  @IsUUID('all')
  msgId!: string;
}

export class ConversationListQuery extends PageQuery {
  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Doc({ description: 'Only conversations of this hardware device.' })
  hdId?: string;
}

export class MessageListQuery extends PageQuery {}

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value);

export class ConversationEventsQuery {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  @Doc({ description: 'Send the events after this sequence number (the `Last-Event-ID` header does the same and wins). Default 0.' })
  after?: number;
}

@Schema({ name: 'ConversationCreateRequest' })
export class ConversationCreateBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'Trip planning' })
  name!: string;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'The bot that answers (one of yours). A conversation without a bot stores messages but cannot run.' })
  botId?: string;

  @IsOptional()
  @IsObject()
  @Doc(confDoc)
  conf?: Record<string, unknown>;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsUUID('all', { each: true })
  @Doc({ description: 'User ids of the members; default (and always included) the creator.' })
  members?: string[];

  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Doc({ description: 'Id of the hardware device the conversation belongs to (Trellis extension, for `GET /conversation?hdId=`).' })
  hdId?: string;
}

@Schema({ name: 'ConversationUpdateRequest' })
export class ConversationUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @ValidateIf(present)
  @IsObject()
  @Doc({ ...confDoc, description: 'Replaces the stored conf as a whole: send it complete.' })
  conf?: Record<string, unknown>;
}

@Schema({ name: 'MessageAttrs' })
export class MessageAttrsBody {
  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Answer at once (202) and push the output over the user WebSocket as `conversation` notifications.' })
  stream?: boolean;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Run the tool calls of the model and feed the results back until it answers (bounded by ai.toolAutoMaxSteps).' })
  tool_auto?: boolean;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Record what was sent to the model (message count, tool names), usage and credits in the message `debug` field.' })
  isDebug?: boolean;
}

@Schema({ name: 'MessageSendRequest' })
export class MessageSendBody {
  @IsString()
  @Length(1, MAX_CONTENT)
  content!: string;

  @IsOptional()
  @ValidateNested()
  @Type(() => MessageAttrsBody)
  @Doc({ nested: () => MessageAttrsBody })
  attrs?: MessageAttrsBody;
}

@Schema({ name: 'MessageRunRequest' })
export class MessageRunBody {
  @IsOptional()
  @IsString()
  @Length(1, MAX_CONTENT)
  @Doc({ description: 'A new user message to answer. Without it the bot answers the conversation as it stands (run) or the message named in the path (rerun); on rerun of a user message it replaces that message\'s text.' })
  content?: string;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @IsBoolean()
  tool_auto?: boolean;

  @IsOptional()
  @IsBoolean()
  isDebug?: boolean;
}

@Schema({ name: 'ToolAnswerRequest' })
export class ToolAnswerBody {
  @IsString()
  @Length(1, 128)
  @Doc({ description: 'Id of a tool call of the assistant message in the path.' })
  tool_call_id!: string;

  @IsString()
  @MaxLength(MAX_CONTENT)
  @Doc({ description: "The tool's result as text (JSON is fine)." })
  content!: string;
}

export class ToolExecuteParams {
  @IsUUID('all')
  toolId!: string;
}

@Schema({ name: 'ToolExecuteRequest' })
export class ToolExecuteBody {
  @IsString()
  @MaxLength(MAX_CONTENT)
  @Doc({ description: 'Text input of the call, available to templates as `{{content}}`.' })
  content!: string;

  @IsUUID('all')
  @Doc({ description: 'The conversation the call belongs to (you must be a member).' })
  convId!: string;

  @IsUUID('all')
  @Doc({ description: 'A message of that conversation the call relates to.' })
  msgId!: string;

  @IsString()
  @Length(1, 64)
  @Doc({ description: 'Name of the action of the tool to run.' })
  hook!: string;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'Arguments of the action (`{{data.x}}` and `{{x}}` in templates; the arguments of an MCP tool).', schema: { type: 'object', additionalProperties: true } })
  data?: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Also store the result in the conversation as a tool message (pushed as `tool-result`).' })
  send?: boolean;
}
