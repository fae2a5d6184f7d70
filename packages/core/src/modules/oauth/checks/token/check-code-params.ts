import { InvalidRequest } from '../../oauth-errors.js';
import { isCodeVerifier } from '../../pkce.js';
import type { TokenCheck } from './token-request.js';

/**
 * code, redirect_uri and code_verifier are required; the verifier must be 43 to 128 characters of
 * A-Z a-z 0-9 - . _ ~. A malformed request is `invalid_request`, before any code is looked up.
 */
export const checkCodeParams: TokenCheck = {
  name: 'authorization_code parameters',
  rule: 'RFC 6749 §4.1.3; RFC 7636 §4.1, §4.5',
  run({ params }) {
    if (!params.code) throw new InvalidRequest('code is required.');
    if (!params.redirect_uri) throw new InvalidRequest('redirect_uri is required.');
    if (!params.code_verifier) throw new InvalidRequest('code_verifier is required (PKCE).');
    if (!isCodeVerifier(params.code_verifier)) throw new InvalidRequest('code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.');
  },
};
