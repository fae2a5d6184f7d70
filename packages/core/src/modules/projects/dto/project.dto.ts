import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, IsUUID, Length, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { projectAccessLevels, type ProjectAccessLevel } from '../entities/project.entity.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

export class ProjectParams {
  @IsUUID('all')
  projectId!: string;
}

@Schema({ name: 'CreateProjectRequest' })
export class CreateProjectBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Unique within the team (409 `project_name_taken`).', example: 'Support bot' })
  name!: string;

  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  @Doc({ description: 'Names of the tools the project uses.', example: ['web_search'] })
  tools!: string[];

  @IsIn(projectAccessLevels)
  @Doc({ description: '`private` (owner only), `team` (owner and team members), `public` (as team, and every signed-in user may read).' })
  access!: ProjectAccessLevel;

  @IsOptional()
  @IsString()
  @MaxLength(100)
  @Doc({ description: 'Name of the template the project starts from (stored; templates come later).' })
  template?: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  description?: string;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Team that owns the project (default: your personal team). You must be a member.' })
  teamId?: string;
}

@Schema({ name: 'CreateFolderRequest' })
export class CreateFolderBody {
  @Transform(trim)
  @IsString()
  @Length(1, 500)
  label!: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ description: 'Key of the folder to create it in (default: the top of the tree).' })
  parentKey?: string;
}

@Schema({ name: 'UpdateProjectRequest' })
export class UpdateProjectBody {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Unique within the team (409 `project_name_taken`).' })
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  description?: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  tools?: string[];

  @IsOptional()
  @IsIn(projectAccessLevels)
  @Doc({ description: 'Only the owner may change it (403 `project_owner_required`).' })
  access?: ProjectAccessLevel;
}
