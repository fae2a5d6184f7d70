import { Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsIn, IsObject, IsOptional, IsString, Length, Matches, MaxLength, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

/**
 * Roles an administrator filters users by. They are derived from the permission flags:
 * `site_admin` (isSiteAdmin), `administrator` (isAdministrator, or a site admin), `developer`
 * (isDeveloper, or a site admin), `user` (none of the three flags).
 */
export const userRoles = ['site_admin', 'administrator', 'developer', 'user'] as const;
export type UserRole = (typeof userRoles)[number];
export const userStatuses = ['active', 'disabled'] as const;

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const present = (_: object, value: unknown) => value !== undefined;

export class UserFilterQuery {
  @IsOptional()
  @IsIn(userRoles)
  @Doc({ description: 'site_admin, administrator (includes site admins), developer (includes site admins), or user (no permission flag).' })
  role?: UserRole;

  @IsOptional()
  @IsIn(userStatuses)
  @Doc({ description: 'active or disabled.' })
  status?: 'active' | 'disabled';
}

export class UserListQuery extends PageQuery {
  @IsOptional()
  @IsIn(userRoles)
  @Doc({ description: 'site_admin, administrator (includes site admins), developer (includes site admins), or user (no permission flag).' })
  role?: UserRole;

  @IsOptional()
  @IsIn(userStatuses)
  @Doc({ description: 'active or disabled.' })
  status?: 'active' | 'disabled';
}

@Schema({ name: 'AdminUserUpdateRequest' })
export class AdminUserUpdateBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'The display name (identity\'s `name`).' })
  username?: string;

  @ValidateIf(present)
  @Transform(trim)
  @IsEmail()
  @MaxLength(320)
  email?: string;

  @IsOptional()
  @IsString()
  @Matches(/^\+?[0-9][0-9 ().-]{2,62}$/, { message: 'must be a phone number (digits, spaces, + ( ) . -)' })
  @Doc({ nullable: true, description: 'A phone number; `null` clears it.', example: '+49 30 1234567' })
  phone?: string | null;

  @ValidateIf(present)
  @IsIn(userStatuses)
  @Doc({ description: '`disabled` logs the user out everywhere at once: every credential of theirs is refused from then on.' })
  status?: 'active' | 'disabled';

  @IsOptional()
  @IsObject()
  @Doc({ nullable: true, description: 'Free-form profile (a JSON object); replaces the stored one; `null` clears it.', schema: { type: 'object', additionalProperties: true } })
  profile?: Record<string, unknown> | null;

  @ValidateIf(present)
  @IsBoolean()
  @Doc({ description: 'Grants or withdraws the developer permission (not part of the spec\'s body; Trellis\'s way to grant it).' })
  isDeveloper?: boolean;

  @ValidateIf(present)
  @IsBoolean()
  @Doc({ description: 'Grants or withdraws the administrator permission.' })
  isAdministrator?: boolean;

  @ValidateIf(present)
  @IsBoolean()
  @Doc({ description: 'Grants or withdraws site administration; only a site administrator may change it.' })
  isSiteAdmin?: boolean;
}
