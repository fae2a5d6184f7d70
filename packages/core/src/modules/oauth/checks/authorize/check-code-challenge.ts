import { InvalidRequest } from '../../oauth-errors.js';
import { isCodeChallenge } from '../../pkce.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * PKCE is required of every client (RFC 9700 §2.1.1): code_challenge must be present and be 43 to
 * 128 base64url characters. A missing challenge is `invalid_request` (RFC 7636 §4.4.1).
 */
export const checkCodeChallenge: AuthorizationCheck = {
  name: 'code_challenge',
  rule: 'RFC 7636 §4.2, §4.4.1; RFC 9700 §2.1.1',
  run(request) {
    const challenge = request.params.code_challenge;
    if (!challenge) throw new InvalidRequest('code_challenge is required (PKCE).');
    if (!isCodeChallenge(challenge)) throw new InvalidRequest('code_challenge must be 43 to 128 base64url characters.');
    request.codeChallenge = challenge;
  },
};
