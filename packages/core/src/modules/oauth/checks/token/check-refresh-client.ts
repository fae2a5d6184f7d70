import { InvalidGrant } from '../../oauth-errors.js';
import { invalidRefreshDescription, type TokenCheck } from './token-request.js';

/** The refresh token was issued to the client that presents it. */
export const checkRefreshClient: TokenCheck = {
  name: 'refresh token issued to this client',
  rule: 'RFC 6749 §6',
  run({ refreshToken, app }) {
    if (refreshToken!.app.id !== app!.id) throw new InvalidGrant(invalidRefreshDescription);
  },
};
