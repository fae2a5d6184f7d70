import type { ErrorKind, TrellisError } from '../errors.js';

/**
 * The `error` values OAuth endpoints may answer: RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1,
 * RFC 7009 §2.2.1, and OpenID Connect Core §3.1.2.6 (`interaction_required` and friends, which
 * `prompt=none` needs).
 */
export const oauthErrorCodes = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'unsupported_response_type',
  'invalid_scope',
  'access_denied',
  'server_error',
  'temporarily_unavailable',
  'invalid_token',
  'insufficient_scope',
  'unsupported_token_type',
  'interaction_required',
  'login_required',
  'consent_required',
  'account_selection_required',
  'invalid_redirect_uri',
  'invalid_client_metadata',
] as const;

export type OAuthErrorCode = (typeof oauthErrorCodes)[number];

const known = new Set<string>(oauthErrorCodes);

/** The RFC code for an error raised outside the OAuth module (parsing, limits, authentication). */
const fallbackByKind: Partial<Record<ErrorKind, OAuthErrorCode>> = {
  unauthenticated: 'invalid_token',
  forbidden: 'access_denied',
  rate_limited: 'temporarily_unavailable',
};

/**
 * The body of an error on a route with `errorFormat: 'oauth'`: only the RFC's fields, an RFC
 * code always (a kernel error such as `unsupported_media_type` becomes `invalid_request`), and
 * `server_error` for anything not exposed.
 */
export function oauthErrorBody(error: TrellisError, message: string): { error: OAuthErrorCode; error_description: string } {
  // RFC 6749 §5.2: error_description holds %x20-21 / %x23-5B / %x5D-7E only.
  const description = message.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, '');
  if (!error.exposed) return { error: 'server_error', error_description: description };
  const code = known.has(error.code) ? (error.code as OAuthErrorCode) : (fallbackByKind[error.kind] ?? 'invalid_request');
  return { error: code, error_description: description };
}
