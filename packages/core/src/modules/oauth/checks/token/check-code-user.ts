import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/** The user who authorized is still active: a disabled account gets no tokens. */
export const checkCodeUser: TokenCheck = {
  name: 'code user active',
  rule: 'RFC 6749 §4.1.3 (the grant is valid)',
  run({ code }) {
    if (code!.user.status !== 'active') throw new InvalidGrant(invalidCodeDescription);
  },
};
