import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsObject, IsOptional, IsString, IsUUID, Length, Matches, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const objectDoc = (description: string) => ({ description, schema: { type: 'object', additionalProperties: true } });

export class AiModelParams {
  @IsUUID('all')
  modelId!: string;
}

export class AiToolParams {
  @IsUUID('all')
  toolId!: string;
}

export class AiListQuery extends PageQuery {}

@Schema({ name: 'AiModelRequest' })
export class AiModelBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'GPT-4o mini' })
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc({ nullable: true, description: '`null` or left out: no description.' })
  desc?: string | null;

  @IsString()
  @Matches(/^[a-z][a-z0-9_-]{0,63}$/, { message: 'service is a lower-case provider name such as openai, anthropic, gemini or dify' })
  @Doc({ description: 'The provider adapter that serves the model (`openai`, `anthropic`, `gemini`, `dify`, or an adapter of your own).', example: 'openai' })
  service!: string;

  @IsObject()
  @Doc(
    objectDoc(
      "Provider settings, checked by the adapter's parseConf (422 invalid_model_conf). Secret keys (`apiKey`) are encrypted at rest and answered as `********`; sending `********` back keeps the stored secret.",
    ),
  )
  conf!: Record<string, unknown>;
}

@Schema({ name: 'AiToolAction' })
export class AiToolActionBody {
  @IsString()
  @Matches(/^[a-zA-Z0-9_-]{1,64}$/, { message: 'an action name is 1 to 64 letters, digits, _ or -' })
  name!: string;

  @IsString()
  @Doc({ description: '`http` (a templated HTTP request) or `mcp` (a tool on a Model Context Protocol server).' })
  type!: string;

  @IsOptional()
  @IsObject()
  @Doc(objectDoc('Settings of the action type (docs/ai.md).'))
  conf?: Record<string, unknown>;
}

@Schema({ name: 'AiToolRequest' })
export class AiToolBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc({ nullable: true, description: '`null` or left out: no description.' })
  desc?: string | null;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ nullable: true, description: 'Free label of the service the tool talks to (stored as given).' })
  service?: string | null;

  @IsOptional()
  @IsObject()
  @Doc(objectDoc('Free-form settings of the tool (stored as given).'))
  conf?: Record<string, unknown>;

  @IsArray()
  @ArrayMaxSize(64)
  @IsObject({ each: true })
  @Doc({ description: 'What the tool can do; each action is offered to a model as one function.', nested: () => AiToolActionBody })
  actions!: AiToolActionBody[];
}
