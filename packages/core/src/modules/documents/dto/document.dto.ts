import { Transform } from 'class-transformer';
import { Allow, ArrayMaxSize, ArrayNotEmpty, IsArray, IsDefined, IsIn, IsInt, IsISO8601, IsObject, IsOptional, IsString, IsUUID, Length, MaxLength, Min, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { editCommandsSchema } from './edit-command.schema.js';
import { versionSources, type VersionSource } from '../entities/document-version.entity.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const toBool = ({ value }: { value: unknown }) => (value === '1' || value === 'true' ? true : value === '0' || value === 'false' ? false : value);
const contentFormats = ['json', 'markdown-ir'] as const;
const contentDoc = 'Document JSON `{ "type": "doc", "content": [...] }`, or a markdown-ir string when content_format is markdown-ir.';

export class DocumentParams {
  @IsUUID('all')
  documentId!: string;
}

export class ContentQuery {
  @IsOptional()
  @IsIn(['markdown-ir', 'json'])
  @Doc({ description: '`markdown-ir` answers the content as markdown-ir text instead of JSON.' })
  format?: 'markdown-ir' | 'json';

  @IsOptional()
  @Transform(toBool)
  @IsIn([true, false])
  @Doc({
    description: '`1` or `true`: keep // comment lines in markdown-ir. Ignored for agent tokens, which never see comments.',
    // The query carries text: the published values are the strings a client sends.
    schema: { type: 'string', enum: ['1', 'true', '0', 'false'] },
  })
  keep_comments?: boolean;
}

@Schema({ name: 'DocumentEditRequest' })
export class EditBody {
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'The content_hash you hold. A different current hash answers 409 version_conflict.', example: '9f3a21bc' })
  base_version!: string;

  @IsIn(['commands', 'content'])
  mode!: 'commands' | 'content';

  @ValidateIf((o: EditBody) => o.mode === 'commands')
  @IsArray()
  @ArrayNotEmpty()
  @Doc({ description: 'Commands applied in order, all or nothing (mode commands). See docs/http/documents.md.', schema: editCommandsSchema })
  commands?: unknown[];

  @ValidateIf((o: EditBody) => o.mode === 'content')
  @IsDefined()
  @Doc({ description: `The whole new content (mode content): ${contentDoc}`, schema: {} })
  content?: unknown;

  @IsOptional()
  @IsIn(contentFormats)
  content_format?: 'json' | 'markdown-ir';
}

@Schema({ name: 'SmartEditRequest' })
export class SmartEditBody {
  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'Optional. When absent the current version is used and one conflict is retried automatically.' })
  base_version?: string;

  @IsIn(['commands', 'content'])
  mode!: 'commands' | 'content';

  @ValidateIf((o: SmartEditBody) => o.mode === 'commands')
  @IsArray()
  @ArrayNotEmpty()
  @Doc({ description: 'Commands applied in order, all or nothing (mode commands). See docs/http/documents.md.', schema: editCommandsSchema })
  commands?: unknown[];

  @ValidateIf((o: SmartEditBody) => o.mode === 'content')
  @IsDefined()
  @Doc({ description: contentDoc, schema: {} })
  content?: unknown;

  @IsOptional()
  @IsIn(contentFormats)
  content_format?: 'json' | 'markdown-ir';
}

@Schema({ name: 'SaveDocumentRequest' })
export class SaveDocumentBody {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Create a document in this project (with title; content optional).' })
  projectId?: string;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Edit this document instead (title and/or content).' })
  documentId?: string;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 500)
  title?: string;

  @IsOptional()
  @Allow()
  @Doc({ description: contentDoc, schema: {} })
  content?: unknown;

  @IsOptional()
  @IsIn(contentFormats)
  content_format?: 'json' | 'markdown-ir';

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'Key of the folder to create the document in (default: the top of the tree).' })
  parentKey?: string;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'Kind of document shown in the file tree (default `document`).' })
  docType?: string;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'When editing content: the content_hash you hold (409 version_conflict when it changed).' })
  base_version?: string;
}

export class DuplicateParams {
  @IsUUID('all')
  projectId!: string;
}

@Schema({ name: 'DuplicateNodeRequest' })
export class DuplicateBody {
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'A document id (file) or a folder key.' })
  nodeKey!: string;

  @IsIn(['file', 'folder'])
  nodeType!: 'file' | 'folder';
}

export class VersionParams extends DocumentParams {
  @IsUUID('all')
  versionId!: string;
}

export class VersionQuery extends PageQuery {
  @IsOptional()
  @IsIn(versionSources)
  @Doc({ description: `Only versions from this source: ${versionSources.join(', ')}.` })
  source?: VersionSource;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Only versions written by this user.' })
  author_id?: string;

  @IsOptional()
  @IsISO8601({ strict: true })
  @Doc({ description: 'Only versions created at or after this time (ISO 8601).' })
  from?: string;

  @IsOptional()
  @IsISO8601({ strict: true })
  @Doc({ description: 'Only versions created at or before this time (ISO 8601).' })
  to?: string;
}

@Schema({ name: 'UiAnnotationsRequest' })
export class UiAnnotationsBody {
  @IsArray()
  @ArrayMaxSize(1000)
  @IsObject({ each: true })
  @Doc({ description: 'The annotations of the UI preview (replace the stored list); each an object such as { id, target, note }.', schema: { type: 'array', items: { type: 'object' } } })
  annotations!: Record<string, unknown>[];
}

@Schema({ name: 'UiPendingChangesRequest' })
export class UiPendingChangesBody {
  @IsArray()
  @ArrayMaxSize(1000)
  @IsObject({ each: true })
  @Doc({ description: 'Changes awaiting the user\'s confirmation (replace the stored ones); an empty array clears them.', schema: { type: 'array', items: { type: 'object' } } })
  changes!: Record<string, unknown>[];

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  summary?: string;
}

@Schema({ name: 'UiPreviewStateRequest' })
export class UiPreviewStateBody {
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Doc({ description: 'The screen shown (a name or route).' })
  screen?: string;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'Viewport, e.g. { width, height, device }.', schema: { type: 'object' } })
  viewport?: Record<string, unknown>;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'Anything the renderer needs to restore the preview.', schema: { type: 'object' } })
  render_state?: Record<string, unknown>;
}

@Schema({ name: 'UiSaveRequest' })
export class UiSaveBody {
  @IsDefined()
  @Doc({ description: `The UI editor output to store as the document content: ${contentDoc}`, schema: {} })
  content!: unknown;

  @IsOptional()
  @IsIn(contentFormats)
  content_format?: 'json' | 'markdown-ir';

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'The content_hash you hold; when given, a changed document answers 409 version_conflict.' })
  base_version?: string;
}

@Schema({ name: 'UiThumbnailRequest' })
export class UiThumbnailBody {
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  @Doc({ description: 'Address of the thumbnail image.' })
  url?: string;

  @IsOptional()
  @IsString()
  @MaxLength(512 * 1024)
  @Doc({ description: 'The image inline, as a data: URL.' })
  data_url?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  width?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  height?: number;

  @IsOptional()
  @IsString()
  @MaxLength(500)
  alt?: string;
}
