import { Transform } from 'class-transformer';
import { IsEmail, IsInt, IsOptional, IsString, IsUrl, Length, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * A URL as WHATWG serializes it: non-ASCII characters percent-encoded (a host in punycode), so what
 * is stored matches the `uri` format the answers document (an IRI such as `https://example.com/ü`
 * was stored as given and answered against the schema). Not a URL: left for the validator.
 */
const normalizeUrl = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  try {
    return new URL(value.trim()).href;
  } catch {
    return value;
  }
};

@Schema({ name: 'RegisterRequest' })
export class RegisterBody {
  @Transform(trim)
  @IsEmail()
  @MaxLength(320)
  @Doc({ example: 'ada@example.com' })
  email!: string;

  @IsString()
  @MaxLength(1024)
  @Doc({ description: 'At least `auth.passwordMinLength` characters (default 8).' })
  password!: string;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Display name; defaults to the part of the email before @.' })
  name?: string;
}

@Schema({ name: 'LoginRequest' })
export class LoginBody {
  @Transform(trim)
  @IsEmail()
  @MaxLength(320)
  email!: string;

  @IsString()
  @MaxLength(1024)
  password!: string;
}

/** Validate when the field is sent at all: `null` then fails the checks that follow. */
const present = (_: object, value: unknown) => value !== undefined;
/** Validate unless absent or `null` (which clears the field). */
const presentAndNotNull = (_: object, value: unknown) => value !== undefined && value !== null;

@Schema({ name: 'UpdateProfileRequest' })
export class UpdateProfileBody {
  @ValidateIf(present)
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @ValidateIf(presentAndNotNull)
  @Transform(normalizeUrl)
  @IsUrl({ require_protocol: true, protocols: ['http', 'https'] })
  @MaxLength(2048)
  @Doc({ nullable: true, description: '`null` removes the avatar.' })
  avatarUrl?: string | null;
}

@Schema({ name: 'ChangePasswordRequest' })
export class ChangePasswordBody {
  @IsString()
  @MaxLength(1024)
  currentPassword!: string;

  @IsString()
  @MaxLength(1024)
  newPassword!: string;
}

@Schema({ name: 'CreateAccessKeyRequest' })
export class CreateAccessKeyBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'CI deploy key' })
  name!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3650)
  @Doc({ description: 'Days until the credential expires; omit for no expiry.' })
  expiresInDays?: number;

  @IsOptional()
  @IsString({ each: true })
  @Matches(/^[a-z][a-z0-9_.:-]{0,63}$/, { each: true })
  @Doc({ description: 'Limit the credential to these scopes; omit for the user\'s full authority.' })
  scopes?: string[];
}
