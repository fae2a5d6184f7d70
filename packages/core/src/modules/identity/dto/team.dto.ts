import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsString, IsUUID, Length, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { teamRoles, type TeamRole } from '../entities/team.entity.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

export class TeamParams {
  @IsUUID('all')
  teamId!: string;
}

export class MemberParams extends TeamParams {
  @IsUUID('all')
  userId!: string;
}

@Schema({ name: 'TeamNameRequest' })
export class TeamNameBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name!: string;
}

@Schema({ name: 'AddMemberRequest' })
export class AddMemberBody {
  @Transform(trim)
  @IsEmail()
  @MaxLength(320)
  @Doc({ description: 'Email of an existing user.' })
  email!: string;

  @IsIn(['admin', 'member'])
  role!: Exclude<TeamRole, 'owner'>;
}

@Schema({ name: 'ChangeRoleRequest' })
export class ChangeRoleBody {
  @IsIn(teamRoles)
  @Doc({ description: 'Giving `owner` transfers ownership (only the owner may); the previous owner becomes admin.' })
  role!: TeamRole;
}
