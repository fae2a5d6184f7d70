import { IsOptional, IsString, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

/*
 * The parameters of the OAuth protocol endpoints. Every field is an optional string here: which
 * ones are required, and what they may hold, is decided by the named checks under `checks/`, so
 * each rule answers the error code its RFC gives. These classes only refuse repeated parameters
 * and absurd lengths (RFC 6749 §3.1: parameters MUST NOT be included more than once) and document
 * the endpoints; unrecognised parameters are ignored (`unknownFields: 'ignore'`, RFC 6749 §3.1).
 */

const MAX = 4096;

@Schema({ name: 'OAuthAuthorizeQuery' })
export class AuthorizeQuery {
  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Must be `code`.', example: 'code' })
  response_type?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'The app\'s client_id.' })
  client_id?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'One of the app\'s registered redirect URIs, character for character.' })
  redirect_uri?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Space-separated scopes; default: every scope of the app.', example: 'profile:read' })
  scope?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: '8 to 256 characters of A-Z a-z 0-9 - . _ ~; returned unchanged.' })
  state?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'BASE64URL(SHA-256(code_verifier)), 43 to 128 characters.' })
  code_challenge?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Must be `S256`.', example: 'S256' })
  code_challenge_method?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Space-separated: login, consent, select_account, or none alone.' })
  prompt?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Pre-fills the login form (at most 320 characters).' })
  login_hint?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Only `popup` is supported.' })
  display?: string;
}

@Schema({ name: 'OAuthConsentRequest', description: 'Sent by the consent page when the signed-in user confirms.' })
export class AuthorizeBody {
  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Required.' })
  client_id?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Required; one of the app\'s registered redirect URIs.' })
  redirect_uri?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Space-separated; default: every scope of the app.' })
  scope?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Optional here; 8 to 256 unreserved characters when present.' })
  state?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Required.' })
  code_challenge?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Required; `S256`.' })
  code_challenge_method?: string;
}

@Schema({ name: 'OAuthTokenRequest', description: 'application/x-www-form-urlencoded (a `charset` parameter is accepted).' })
export class TokenBody {
  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: '`authorization_code` or `refresh_token`.' })
  grant_type?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Both grants.' })
  client_id?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'authorization_code: the code from the redirect.' })
  code?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'authorization_code: the same redirect_uri as in the authorization request.' })
  redirect_uri?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'authorization_code: 43 to 128 characters of A-Z a-z 0-9 - . _ ~.' })
  code_verifier?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'refresh_token: the refresh token (single use).' })
  refresh_token?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'refresh_token, optional: a narrower scope than granted (RFC 6749 §6).' })
  scope?: string;
}

@Schema({ name: 'OAuthRevocationRequest', description: 'application/x-www-form-urlencoded (RFC 7009 §2.1).' })
export class RevokeBody {
  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'Required: an access or refresh token.' })
  token?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: '`access_token` or `refresh_token`; only a hint.' })
  token_type_hint?: string;

  @IsOptional() @IsString() @MaxLength(MAX) @Doc({ description: 'When given, only a token of this client is revoked.' })
  client_id?: string;
}

/** RFC 6749 §3.1, §3.2: a parameter sent without a value is treated as omitted. */
export function present(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
