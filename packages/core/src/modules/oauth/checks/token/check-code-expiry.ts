import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/** Codes are short-lived (`oauth.authorizationCodeTtlSeconds`); an expired code is refused. */
export const checkCodeExpiry: TokenCheck = {
  name: 'code not expired',
  rule: 'RFC 6749 §4.1.2, §10.5',
  run({ code }, { now }) {
    if (code!.expiresAt.getTime() <= now.getTime()) throw new InvalidGrant(invalidCodeDescription);
  },
};
