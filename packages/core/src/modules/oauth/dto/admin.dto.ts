import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, IsUrl, IsUUID, Length, Matches, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/** A client_id an administrator may choose: 3 to 64 unreserved characters (RFC 3986 §2.3). */
export const clientIdPattern = /^[A-Za-z0-9\-._~]{3,64}$/;
const scopePattern = /^[\x21\x23-\x5B\x5D-\x7E]{1,64}$/;
const webUrl = { require_protocol: true, protocols: ['http', 'https'], require_tld: false };

@Schema({ name: 'CreateOAuthAppRequest' })
export class CreateOAuthAppBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ example: 'Acme Notes' })
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @Doc({ description: 'Shown on the consent page; default empty.' })
  description?: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(2048, { each: true })
  @Doc({
    description: 'Absolute URIs without fragment: https, http on a loopback host (127.0.0.1, [::1], localhost), or a private-use scheme with a dot (com.example.app:/callback) for native apps. Compared character for character.',
    example: ['https://notes.example.com/oauth/callback'],
  })
  redirect_uris!: string[];

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @Matches(scopePattern, { each: true })
  @Doc({ description: 'Scopes the app may request: profile:read, chat:completions, mobile:full (configured mobile apps only), or `oauth.extraScopes`.', example: ['profile:read'] })
  scopes!: string[];

  @IsOptional()
  @IsUrl(webUrl)
  @MaxLength(2048)
  homepage_url?: string;

  @IsOptional()
  @IsUrl(webUrl)
  @MaxLength(2048)
  logo_url?: string;

  @IsOptional()
  @Matches(clientIdPattern)
  @Doc({ description: 'Choose the client_id (3 to 64 of A-Z a-z 0-9 - . _ ~), for example to match `oauth.mobileClientIds`; default: generated.' })
  client_id?: string;
}

@Schema({ name: 'UpdateOAuthAppRequest', description: 'Send only the fields to change. Changing scopes or redirect_uris revokes every token of the app.' })
export class UpdateOAuthAppBody {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(2048, { each: true })
  redirect_uris?: string[];

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @Matches(scopePattern, { each: true })
  scopes?: string[];

  @IsOptional()
  @IsUrl(webUrl)
  @MaxLength(2048)
  @Doc({ nullable: true, description: 'null clears it.' })
  homepage_url?: string | null;

  @IsOptional()
  @IsUrl(webUrl)
  @MaxLength(2048)
  @Doc({ nullable: true, description: 'null clears it.' })
  logo_url?: string | null;
}

export class ListOAuthAppsQuery extends PageQuery {
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Doc({ description: 'Matches part of the name or the client_id (case-insensitive).' })
  search?: string;
}

export class OAuthAppIdParams {
  @IsUUID('all')
  id!: string;
}
