import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/** The code was issued to the client that presents it. */
export const checkCodeClient: TokenCheck = {
  name: 'code issued to this client',
  rule: 'RFC 6749 §4.1.3',
  run({ code, app }) {
    if (code!.app.id !== app!.id) throw new InvalidGrant(invalidCodeDescription);
  },
};
