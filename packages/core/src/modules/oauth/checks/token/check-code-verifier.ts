import { InvalidGrant } from '../../oauth-errors.js';
import { verifyS256 } from '../../pkce.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/**
 * PKCE: BASE64URL(SHA256(code_verifier)) equals the code's stored challenge. Only the holder of
 * the verifier gets further, so only it can trigger reuse handling for the code.
 */
export const checkCodeVerifier: TokenCheck = {
  name: 'PKCE verifier',
  rule: 'RFC 7636 §4.6; RFC 9700 §2.1.1, §4.5',
  run({ code, params }) {
    if (!verifyS256(params.code_verifier!, code!.codeChallenge)) throw new InvalidGrant(invalidCodeDescription);
  },
};
