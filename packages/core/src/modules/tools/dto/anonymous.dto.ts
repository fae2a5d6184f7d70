import { IsEmail, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

@Schema({ name: 'AnonymousSignInRequest' })
export class AnonymousSignInBody {
  @IsString()
  @Matches(/^[A-Za-z0-9_.:@-]{6,128}$/, { message: 'anonymous must be 6 to 128 letters, digits or _ . : @ -' })
  @Doc({ description: 'The client-chosen anonymous identifier (a device id, for example): 6 to 128 letters, digits or `_ . : @ -`. A new one creates the user.', example: 'device-7f3a9c21' })
  anonymous!: string;

  @IsString()
  @Length(8, 256)
  @Doc({ description: 'The password of this identifier (8 to 256 characters), chosen on the first sign-in.', example: 'a long random secret' })
  passwd!: string;
}

/** Form fields of POST /tool/home/oauth/token (the OAuth server's authorization_code grant). */
export class ToolTokenBody {
  @IsOptional() @IsString() @MaxLength(64) grant_type?: string;
  @IsOptional() @IsString() @MaxLength(512) code?: string;
  @IsOptional() @IsString() @MaxLength(128) client_id?: string;
  @IsOptional() @IsString() @MaxLength(2048) redirect_uri?: string;
  @IsOptional() @IsString() @MaxLength(128) code_verifier?: string;
}

/** Form fields of POST /tool/home/oauth/rtoken. */
export class ToolRefreshBody {
  @IsOptional() @IsString() @MaxLength(64) grant_type?: string;
  @IsOptional() @IsString() @MaxLength(512) refresh_token?: string;
  @IsOptional() @IsString() @MaxLength(128) client_id?: string;
  @IsOptional() @IsString() @MaxLength(1000) scope?: string;
}

@Schema({ name: 'AnonymousUpgradeRequest' })
export class AnonymousUpgradeBody {
  @IsEmail()
  @MaxLength(320)
  email!: string;

  @IsString()
  @MaxLength(256)
  @Doc({ description: 'The new password (at least `auth.passwordMinLength` characters).' })
  password!: string;

  @IsOptional()
  @IsString()
  @Length(1, 200)
  name?: string;
}
