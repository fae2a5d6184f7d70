import { Transform } from 'class-transformer';
import { IsObject, IsString, IsUUID, Length, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const present = (_: object, value: unknown) => value !== undefined;
const confDoc = {
  description:
    '`avatar`, `desc`, `modelId` (an AI model of yours; required to chat), and Trellis\' `prompt` (system prompt) and `toolIds` (AI tools of yours offered to the model). Other keys are kept as given.',
  schema: {
    type: 'object',
    additionalProperties: true,
    properties: {
      avatar: { type: 'string' },
      desc: { type: 'string' },
      modelId: { type: 'string', format: 'uuid' },
      prompt: { type: 'string' },
      toolIds: { type: 'array', items: { type: 'string', format: 'uuid' } },
    },
  },
};

export class BotParams {
  @IsUUID('all')
  botId!: string;
}

export class BotListQuery extends PageQuery {}

@Schema({ name: 'BotCreateRequest' })
export class BotCreateBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'Support bot' })
  name!: string;

  @IsObject()
  @Doc(confDoc)
  conf!: Record<string, unknown>;
}

@Schema({ name: 'BotUpdateRequest' })
export class BotUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @ValidateIf(present)
  @IsObject()
  @Doc({ ...confDoc, description: `Replaces the stored conf as a whole. ${confDoc.description}` })
  conf?: Record<string, unknown>;
}
