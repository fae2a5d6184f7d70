import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, ValidateNested, IsInt, IsObject, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value);

/** Collection names: a letter, then letters, digits and `_` (at most 100). */
export const CLASS_NAME = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;

export class VdbCollectionParams {
  @Matches(CLASS_NAME)
  @Doc({ description: 'Collection name: a letter, then up to 99 letters, digits or `_`.', example: 'Faq' })
  className!: string;
}

export class VdbRecordParams extends VdbCollectionParams {
  @IsUUID('all')
  @Doc({ description: 'Record id (UUID).' })
  id!: string;
}

export class VdbListQuery {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  @Doc({ description: 'Records per page (default 20, at most 100).', example: 20 })
  limit?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Doc({ description: 'Records to skip (default 0).', example: 0 })
  skip?: number;

  @IsOptional()
  @IsString()
  @MaxLength(20_000)
  @Doc({ description: 'A filter in the filter language, as URL-encoded JSON, e.g. `{"tags":"faq","metadata.year":{"$gte":2020}}`.' })
  where?: string;
}

const tagsDoc = {
  description: 'Up to 100 tags: strings (at most 200 characters), numbers or booleans.',
  example: ['faq', 'billing'],
  schema: { type: 'array', maxItems: 100, items: { type: ['string', 'number', 'boolean'] } },
};
const metadataDoc = {
  description: 'Any JSON object (at most 64 KiB); filterable with `metadata.<key>`.',
  example: { lang: 'en', year: 2024 },
  schema: { type: 'object', additionalProperties: true },
};

@Schema({ name: 'VdbCreateRequest' })
export class VdbCreateBody {
  @IsString()
  @MaxLength(1_000_000)
  @Doc({ description: 'The text that is stored and embedded.', example: 'How do I reset my password?' })
  content!: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @Doc(tagsDoc)
  tags?: Array<string | number | boolean>;

  @IsOptional()
  @IsObject()
  @Doc(metadataDoc)
  metadata?: Record<string, unknown>;
}

@Schema({ name: 'VdbBatchCreateRequest' })
export class VdbBatchCreateBody {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => VdbCreateBody)
  @Doc({ description: '1 to 1,000 records, embedded in batches and written in one transaction.', nested: () => VdbCreateBody })
  records!: VdbCreateBody[];
}

@Schema({ name: 'VdbUpdateRequest' })
export class VdbUpdateBody {
  @IsOptional()
  @IsString()
  @MaxLength(1_000_000)
  @Doc({ description: 'New content; embedded again.' })
  content?: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @Doc({ ...tagsDoc, description: `Replaces the tags. ${tagsDoc.description}` })
  tags?: Array<string | number | boolean>;

  @IsOptional()
  @IsObject()
  @Doc({ ...metadataDoc, description: `Replaces the metadata as a whole. ${metadataDoc.description}` })
  metadata?: Record<string, unknown>;
}

@Schema({ name: 'VdbSearchRequest' })
export class VdbSearchBody {
  @IsString()
  @MaxLength(1_000_000)
  @Doc({ description: 'The text to search by.', example: 'forgot password' })
  content!: string;

  @IsOptional()
  @IsObject()
  @Doc({
    description: '`filter` (the filter language; applied before ranking) and `limit` (1 to 100, default 10).',
    example: { filter: { tags: 'faq' }, limit: 5 },
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: { filter: { type: 'object', additionalProperties: true }, limit: { type: 'integer', minimum: 1, maximum: 1000 } },
    },
  })
  query?: { filter?: unknown; limit?: unknown };
}
