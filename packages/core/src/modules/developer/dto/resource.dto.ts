import { Transform } from 'class-transformer';
import { IsObject, IsOptional, IsString, Length, MaxLength, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
/** Present (not undefined): `null` is then refused by the checks that follow. */
const present = (_: object, value: unknown) => value !== undefined;

const configDoc = { description: 'Free-form settings (a JSON object).', schema: { type: 'object', additionalProperties: true } };
const descriptionDoc = { nullable: true, description: 'Free text; `null` clears it on update.' };

/** Create body of hardware, bot, task, tool and app: name required; description, config optional. */
@Schema({ name: 'DevResourceCreateRequest' })
export class DevNamedCreateBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'Kitchen sensor' })
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc(descriptionDoc)
  description?: string | null;

  @IsOptional()
  @IsObject()
  @Doc(configDoc)
  config?: Record<string, unknown>;
}

/** Update body of hardware, bot, task, tool and app: every field optional. */
@Schema({ name: 'DevResourceUpdateRequest' })
export class DevNamedUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc(descriptionDoc)
  description?: string | null;

  @ValidateIf(present)
  @IsObject()
  @Doc({ ...configDoc, description: 'Replaces the stored settings as a whole.' })
  config?: Record<string, unknown>;
}

@Schema({ name: 'DevModelCreateRequest' })
export class DevModelCreateBody extends DevNamedCreateBody {
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'Kind of model, for example `chat` or `embedding`.', example: 'chat' })
  type!: string;
}

@Schema({ name: 'DevModelUpdateRequest' })
export class DevModelUpdateBody extends DevNamedUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  type?: string;
}

/** Conversations are created with a title instead of a name. */
@Schema({ name: 'DevConvCreateRequest' })
export class DevConvCreateBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'Support chat' })
  title!: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc(descriptionDoc)
  description?: string | null;

  @IsOptional()
  @IsObject()
  @Doc(configDoc)
  config?: Record<string, unknown>;
}

@Schema({ name: 'DevConvUpdateRequest' })
export class DevConvUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  title?: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  @Doc(descriptionDoc)
  description?: string | null;

  @ValidateIf(present)
  @IsObject()
  @Doc({ ...configDoc, description: 'Replaces the stored settings as a whole.' })
  config?: Record<string, unknown>;
}
