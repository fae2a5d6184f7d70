import { InvalidGrant } from '../../oauth-errors.js';
import { invalidRefreshDescription, type TokenCheck } from './token-request.js';

/**
 * The token, its family and its user are still good: not expired, the family neither revoked nor
 * past its absolute lifetime nor from before the app's last revocation, the user active.
 */
export const checkRefreshValidity: TokenCheck = {
  name: 'refresh token, family and user valid',
  rule: 'RFC 6749 §6; RFC 9700 §4.14.2',
  run({ refreshToken, app }, { now }) {
    const token = refreshToken!;
    const family = token.tokenFamily;
    const at = now.getTime();
    if (token.expiresAt.getTime() <= at) throw new InvalidGrant(invalidRefreshDescription);
    if (family.revokedAt || (family.expiresAt && family.expiresAt.getTime() <= at)) throw new InvalidGrant(invalidRefreshDescription);
    if (family.appEpoch !== app!.tokenEpoch) throw new InvalidGrant(invalidRefreshDescription);
    if (token.user.status !== 'active') throw new InvalidGrant(invalidRefreshDescription);
  },
};
