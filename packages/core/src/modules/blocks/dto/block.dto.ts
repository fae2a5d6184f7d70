import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Length, Matches, Max, MaxLength, Min } from 'class-validator';
import { Doc, Nested, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { blockTypes, deploymentAccessLevels, type BlockType, type DeploymentAccess } from '../entities/block.entity.js';

/** The largest budget in credits (the columns are 32-bit integers); see modules/runs/services/run-budget.ts. */
export const MAX_BUDGET = 2_000_000_000;

@Schema({ name: 'Budget', description: 'A budget in credits (docs/runs.md, "Budgets"): model calls that would spend more make the run wait.' })
export class BudgetDto {
  @IsInt()
  @Min(0)
  @Max(MAX_BUDGET)
  @Doc({ description: `Credits, a whole number from 0 to ${MAX_BUDGET}.`, example: 500 })
  credits!: number;
}

const deploymentBudgetDoc = {
  nullable: true,
  description:
    'The deployment\'s budget in credits (docs/runs.md, "Budgets"): before every model call of one of its API runs, when what all its API runs spent plus the call\'s credit hold would exceed it, the run waits (`reason: "budget"`). Raising or clearing it resumes those runs. Absent: unchanged; null: none.',
};

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const toBool = ({ value }: { value: unknown }) => (value === '1' || value === 'true' ? true : value === '0' || value === 'false' ? false : value);
/** The query values a flag accepts (`toBool`), as the OpenAPI document states them. */
const queryFlag = { enum: ['true', 'false', '1', '0', true, false] };
const typeDoc = `What the block is for: ${blockTypes.map((t) => `\`${t}\``).join(', ')} (unknown values answer 422).`;
const accessDoc =
  'Who may call the deployment (`POST /block/:bid/api`): `private` (the execute permission in the project), `team` (the owner and members of the project\'s team), `public` (anyone, no credential needed), `token` (callers presenting the deployment token in `X-Deployment-Token`, and the execute permission).';
const contentDoc = 'Document JSON `{ "type": "doc", "content": [...] }` (the documents content model).';

export class PageParams {
  @IsUUID('all')
  pageId!: string;
}

export class BlockIdParams {
  @IsUUID('all')
  blockId!: string;
}

export class BidParams {
  @IsUUID('all')
  bid!: string;
}

export class ProjectIdParams {
  @IsUUID('all')
  projectId!: string;
}

export class ProjectPageParams {
  @IsUUID('all')
  projectId!: string;

  @IsUUID('all')
  pageId!: string;
}

export class ProjectBlockParams {
  @IsUUID('all')
  projectId!: string;

  @IsUUID('all')
  blockId!: string;
}

export class PidBidParams {
  @IsUUID('all')
  pid!: string;

  @IsUUID('all')
  bid!: string;
}

@Schema({ name: 'CreateBlockRequest' })
export class CreateBlockBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Unique within the project, trash included (409 `block_name_taken`).', example: 'Summarise a ticket' })
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  description?: string;

  @IsIn(blockTypes)
  @Doc({ description: typeDoc, example: 'workflow' })
  type!: BlockType;

  @IsOptional()
  @IsObject()
  @Doc({ description: `Initial content (default: an empty document). ${contentDoc}`, schema: { type: 'object' } })
  content?: Record<string, unknown>;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ description: 'Key of the folder of the file tree to create it in (default: the top).' })
  parentKey?: string;
}

@Schema({ name: 'UpdateBlockRequest' })
export class UpdateBlockBody {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Unique within the project (409 `block_name_taken`); also renames the page in the file tree.' })
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  description?: string;

  @IsOptional()
  @IsObject()
  @Doc({ description: `Replaces the whole content. ${contentDoc} Per-block edits go through \`POST /documents/:pageId/edit\`.`, schema: { type: 'object' } })
  content?: Record<string, unknown>;

  @IsOptional()
  @IsString()
  @Matches(/^[0-9a-f]{8}$/)
  @Doc({ description: 'The content_hash the content must still have (409 `version_conflict` otherwise).' })
  base_version?: string;
}

export class DeleteBlockQuery {
  @IsOptional()
  @Transform(toBool)
  @IsIn([true, false])
  @Doc({ description: '`true` (or `1`) deletes for good, also a block already in the trash; otherwise the block moves to the trash.', schema: queryFlag })
  confirm?: boolean;
}

@Schema({ name: 'DeployBlockRequest' })
export class DeployBody {
  @IsIn(deploymentAccessLevels)
  @Doc({ description: accessDoc, example: 'team' })
  access!: DeploymentAccess;

  @IsOptional()
  @IsString()
  @MaxLength(32)
  @Doc({ description: 'The version to publish: one to three dot-separated numbers (default: `GET /block/:blockId/next-version`). An existing version answers 409 `block_version_exists`.', example: '1' })
  version?: string;

  @IsOptional()
  @Nested(() => BudgetDto)
  @Doc(deploymentBudgetDoc)
  budget?: BudgetDto | null;
}

@Schema({ name: 'DeploymentInput' })
export class DeploymentInputDto {
  @IsString()
  @Length(1, 100)
  name!: string;

  @IsString()
  @Length(1, 32)
  @Doc({ description: 'The input type, as the block\'s input block declares it (`string`, `number`, ...).', example: 'string' })
  type!: string;

  @IsBoolean()
  required!: boolean;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @IsOptional()
  // Every JSON type spelled out (rather than `{}`): the /docs renderer's schema check rejects this
  // object with an untyped `default` property and logs a console error. `null` is a value too.
  @Doc({ nullable: true, description: 'Default value (any JSON, `null` included).', schema: { type: ['string', 'number', 'boolean', 'object', 'array'] } })
  default?: unknown;
}

@Schema({ name: 'UpdateDeploymentRequest' })
export class UpdateDeploymentBody {
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @Nested(() => DeploymentInputDto, { each: true })
  @Doc({ description: 'Input definitions shown to the callers of the deployment.' })
  inputs?: DeploymentInputDto[];

  @IsOptional()
  @IsIn(deploymentAccessLevels)
  @Doc({ description: `${accessDoc} Default: the current one, or \`private\`.` })
  access?: DeploymentAccess;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ description: 'How clients present the deployment (free text, such as `api`, `form`, `chat`).', example: 'api' })
  deployType?: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @Doc({ description: 'Cover image (a URL).' })
  cover?: string;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'With access `token`: issue a new deployment token (the old one is revoked).' })
  rotateToken?: boolean;

  @IsOptional()
  @Nested(() => BudgetDto)
  @Doc(deploymentBudgetDoc)
  budget?: BudgetDto | null;
}

export class DeploymentQuery {
  @IsOptional()
  @IsString()
  @MaxLength(32)
  @Doc({ description: 'A deployed version (default: the latest).' })
  version?: string;
}

@Schema({ name: 'InstallBlockRequest' })
export class InstallBody {
  @IsOptional()
  @IsString()
  @MaxLength(32)
  @Doc({ description: 'The deployed version to install (default: the latest).' })
  version?: string;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: "Name of the new block (default: the deployment's name)." })
  name?: string;
}

export class SearchQuery extends PageQuery {
  @IsIn(['page', 'deployment'])
  @Doc({ description: '`page`: blocks of the project; `deployment`: deployed blocks of the project.' })
  type!: 'page' | 'deployment';

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'With `page`: blocks installed from this block; with `deployment`: the deployment of this block.' })
  fromBid?: string;

  @IsOptional()
  @Transform(toBool)
  @IsIn([true, false])
  @Doc({ description: 'Add `nextVersion` to every item: the next free version of the block (for installed blocks, of the block they came from). `true` or `1`.', schema: queryFlag })
  nextVersion?: boolean;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Doc({ description: 'Only names containing this text (case-insensitive; `%` and `_` match any one character).' })
  q?: string;
}

@Schema({ name: 'RestoreTrashRequest' })
export class RestoreTrashBody {
  @IsUUID('all')
  projectId!: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  @IsUUID('all', { each: true })
  @Doc({ description: 'Only these blocks (default: everything in the trash).' })
  blockIds?: string[];
}
