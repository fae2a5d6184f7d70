import { describe, expect, it } from 'vitest';
import { TrellisError } from '../errors.js';
import { oauthErrorBody } from './oauth-error-body.js';

describe('oauthErrorBody', () => {
  it('keeps an RFC code and drops every field the RFC does not name', () => {
    const error = new TrellisError('bad_request', 'invalid_grant', 'The code is used.', { extra: { current_version: 'x' }, details: [] });
    expect(oauthErrorBody(error, error.message)).toEqual({ error: 'invalid_grant', error_description: 'The code is used.' });
  });

  it('turns kernel codes into RFC codes', () => {
    const cases: Array<[TrellisError, string]> = [
      [new TrellisError('unsupported_media_type', 'unsupported_media_type', 'x'), 'invalid_request'],
      [new TrellisError('validation', 'validation_failed', 'x'), 'invalid_request'],
      [new TrellisError('payload_too_large', 'payload_too_large', 'x'), 'invalid_request'],
      [new TrellisError('unauthenticated', 'missing_credentials', 'x'), 'invalid_token'],
      [new TrellisError('unauthenticated', 'token_expired', 'x'), 'invalid_token'],
      [new TrellisError('forbidden', 'credential_not_allowed', 'x'), 'access_denied'],
      [new TrellisError('forbidden', 'insufficient_scope', 'x'), 'insufficient_scope'],
      [new TrellisError('rate_limited', 'rate_limited', 'x'), 'temporarily_unavailable'],
      [new TrellisError('not_found', 'route_not_found', 'x'), 'invalid_request'],
    ];
    for (const [error, code] of cases) expect(oauthErrorBody(error, 'm').error, error.code).toBe(code);
  });

  it('answers server_error for anything not exposed, whatever its code', () => {
    expect(oauthErrorBody(new TrellisError('internal', 'invalid_grant', 'secret detail'), 'An internal error occurred.')).toEqual({
      error: 'server_error',
      error_description: 'An internal error occurred.',
    });
  });

  it('keeps error_description within the RFC 6749 §5.2 character set', () => {
    const error = new TrellisError('bad_request', 'invalid_request', 'x');
    expect(oauthErrorBody(error, 'say "hi" \\ café\n').error_description).toBe('say hi  caf');
  });
});
