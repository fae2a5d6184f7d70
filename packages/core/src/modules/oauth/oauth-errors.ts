import { TrellisError, type ErrorKind } from '../../kernel/errors.js';
import type { OAuthErrorCode } from '../../kernel/http/oauth-error-body.js';

/**
 * OAuth errors exactly as the RFCs name them: one class per `error` code this module answers.
 * Routes with `errorFormat: 'oauth'` serialise only `error` and `error_description`; the kernel
 * turns its own errors on those routes into RFC codes too (`server_error` for anything not
 * exposed, `insufficient_scope` for a missing scope, `access_denied` for a refused credential
 * kind: see `kernel/http/oauth-error-body.ts`). The authorization endpoint may instead redirect
 * the error to the client (RFC 6749 §4.1.2.1), with the same two fields.
 */
export abstract class OAuthError extends TrellisError {
  declare readonly code: OAuthErrorCode;

  protected constructor(kind: ErrorKind, code: OAuthErrorCode, description: string, headers?: Record<string, string>, status?: number) {
    super(kind, code, asDescription(description), { ...(headers ? { headers } : {}), ...(status ? { status } : {}) });
  }

  /** `error_description` (RFC 6749 §5.2: human-readable ASCII). */
  get description(): string {
    return this.message;
  }
}

/** RFC 6749 §5.2: error_description holds %x20-21 / %x23-5B / %x5D-7E only (no quote, no backslash). */
function asDescription(text: string): string {
  return text.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, '');
}

export const isOAuthError = (value: unknown): value is OAuthError => value instanceof OAuthError;

/** RFC 6749 §4.1.2.1 / §5.2: a parameter is missing, repeated, malformed or unsupported. */
export class InvalidRequest extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'invalid_request', description);
  }
}

/**
 * RFC 6749 §5.2: client authentication failed (unknown, disabled or deleted client). Public
 * clients do not authenticate with the Authorization header, so the status is 400.
 */
export class InvalidClient extends OAuthError {
  constructor(description: string, status = 400, headers?: Record<string, string>) {
    super(status === 401 ? 'unauthenticated' : 'bad_request', 'invalid_client', description, headers, status);
  }

  /**
   * RFC 6749 §5.2: when the client tried to authenticate with the Authorization header (Basic),
   * invalid_client is a 401 with a WWW-Authenticate challenge of the scheme it used.
   */
  static afterBasic(error: InvalidClient): InvalidClient {
    return new InvalidClient(error.description, 401, { 'www-authenticate': 'Basic realm="trellis", charset="UTF-8"' });
  }
}

/** RFC 6749 §5.2: the code or refresh token is invalid, expired, revoked, reused or bound elsewhere. */
export class InvalidGrant extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'invalid_grant', description);
  }
}

/** RFC 6749 §5.2: the grant type is not one this server supports. */
export class UnsupportedGrantType extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'unsupported_grant_type', description);
  }
}

/** RFC 6749 §4.1.2.1: the response type is not `code`. */
export class UnsupportedResponseType extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'unsupported_response_type', description);
  }
}

/** RFC 6749 §3.3, §4.1.2.1, §5.2: a requested scope is unknown, malformed or not granted to the client. */
export class InvalidScope extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'invalid_scope', description);
  }
}

/** RFC 6749 §4.1.2.1: a temporary condition, here a rate limit; `Retry-After` says when to retry. */
export class TemporarilyUnavailable extends OAuthError {
  constructor(description: string, retryAfterSeconds: number) {
    super('rate_limited', 'temporarily_unavailable', description, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** OpenID Connect Core §3.1.2.6: `prompt=none`, but the request needs the user (always, here). */
export class InteractionRequired extends OAuthError {
  constructor(description: string) {
    super('bad_request', 'interaction_required', description);
  }
}

const realm = 'realm="trellis"';
const quoted = (text: string) => text.replace(/[\\"]/g, '');

/**
 * RFC 6750 §3.1: the access token is missing, unknown, expired or revoked. 401 with a
 * `WWW-Authenticate: Bearer` challenge; when no token was sent the challenge carries no error code.
 */
export class InvalidToken extends OAuthError {
  constructor(description: string, options: { tokenSent?: boolean } = {}) {
    const challenge =
      options.tokenSent === false ? `Bearer ${realm}` : `Bearer ${realm}, error="invalid_token", error_description="${quoted(description)}"`;
    super('unauthenticated', 'invalid_token', description, { 'www-authenticate': challenge });
  }
}
