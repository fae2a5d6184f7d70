import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/** redirect_uri is identical to the one of the authorization request the code answered. */
export const checkCodeRedirectUri: TokenCheck = {
  name: 'code redirect_uri',
  rule: 'RFC 6749 §4.1.3',
  run({ code, params }) {
    if (code!.redirectUri !== params.redirect_uri) throw new InvalidGrant(invalidCodeDescription);
  },
};
