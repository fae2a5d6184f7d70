import { sha256Hex } from '../../../../kernel/crypto.js';
import { InvalidClient, InvalidRequest } from '../../oauth-errors.js';
import { findRefreshGrant, findTokenApp } from '../../queries.js';
import { REFRESH_TOKEN_PREFIX } from '../../token-prefixes.js';
import type { TokenCheck } from './token-request.js';

/**
 * Public clients identify themselves with client_id (required by the spec for both grants; they
 * have no secret and prove possession with PKCE or the refresh token). It must name an active app.
 * On a refresh grant with a well-formed refresh token, the same statement also reads the token,
 * its family and its user, for `findRefreshToken` (one read per grant).
 */
export const checkClientId: TokenCheck = {
  name: 'client_id',
  rule: 'RFC 6749 §3.2.1, §4.1.3, §5.2',
  async run(request, { sql }) {
    const clientId = request.params.client_id;
    if (!clientId) throw new InvalidRequest('client_id is required.');
    const presented = request.params.refresh_token;
    if (request.params.grant_type === 'refresh_token' && presented?.startsWith(REFRESH_TOKEN_PREFIX)) {
      const found = await findRefreshGrant(sql, clientId, sha256Hex(presented));
      if (!found.app) throw new InvalidClient('client_id names no active application.');
      request.app = found.app;
      request.prefetchedRefreshToken = found.refreshToken;
      return;
    }
    const app = await findTokenApp(sql, clientId);
    if (!app) throw new InvalidClient('client_id names no active application.');
    request.app = app;
  },
};
