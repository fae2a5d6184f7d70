import { Allow, ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, IsUUID, Max, Min, ValidateIf, ArrayNotEmpty, IsDefined } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

@Schema({ name: 'YjsStateRequest' })
export class YjsStateBody {
  @IsArray()
  @ArrayMaxSize(256 * 1024 * 1024)
  @IsInt({ each: true })
  @Min(0, { each: true })
  @Max(255, { each: true })
  @Doc({ description: 'A full Yjs update (Y.encodeStateAsUpdate) as an array of bytes.', schema: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 255 } } })
  state!: number[];
}

@Schema({ name: 'CollabLeaveRequest' })
export class CollabLeaveBody {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'The participant_id from join (default: every participation of yours).' })
  participant_id?: string;
}

@Schema({ name: 'CollabEditRequest' })
export class CollabEditBody {
  @IsIn(['commands', 'content'])
  mode!: 'commands' | 'content';

  @ValidateIf((o: CollabEditBody) => o.mode === 'commands')
  @IsArray()
  @ArrayNotEmpty()
  @Doc({ description: 'Commands as in POST /documents/:id/edit.', schema: { type: 'array', items: { type: 'object' } } })
  commands?: unknown[];

  @ValidateIf((o: CollabEditBody) => o.mode === 'content')
  @IsDefined()
  @Allow()
  @Doc({ description: 'The whole new content: document JSON, or markdown-ir text with content_format markdown-ir.', schema: {} })
  content?: unknown;

  @IsOptional()
  @IsIn(['json', 'markdown-ir'])
  content_format?: 'json' | 'markdown-ir';

  @IsOptional()
  @IsString()
  @Doc({ description: 'Ignored: collaborative edits merge with concurrent ones instead of conflicting. Accepted for symmetry with edit.' })
  base_version?: string;
}
