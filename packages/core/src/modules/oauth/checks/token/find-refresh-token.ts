import { sha256Hex } from '../../../../kernel/crypto.js';
import { InvalidGrant } from '../../oauth-errors.js';
import { findRefreshToken as findByHash } from '../../queries.js';
import { REFRESH_TOKEN_PREFIX } from '../../token-prefixes.js';
import { invalidRefreshDescription, type TokenCheck } from './token-request.js';

/**
 * The refresh token must be one this server issued (looked up by SHA-256 digest only; usually
 * read already by `checkClientId` in the same statement as the app).
 */
export const findRefreshToken: TokenCheck = {
  name: 'refresh token exists',
  rule: 'RFC 6749 §6, §5.2 (invalid_grant)',
  async run(request, { sql }) {
    const presented = request.params.refresh_token!;
    if (!presented.startsWith(REFRESH_TOKEN_PREFIX)) throw new InvalidGrant(invalidRefreshDescription);
    const token = request.prefetchedRefreshToken !== undefined ? request.prefetchedRefreshToken : await findByHash(sql, sha256Hex(presented));
    if (!token) throw new InvalidGrant(invalidRefreshDescription);
    request.refreshToken = token;
  },
};
