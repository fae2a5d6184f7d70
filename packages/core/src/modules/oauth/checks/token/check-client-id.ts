import { InvalidClient, InvalidRequest } from '../../oauth-errors.js';
import { findTokenApp } from '../../queries.js';
import type { TokenCheck } from './token-request.js';

/**
 * Public clients identify themselves with client_id (required by the spec for both grants; they
 * have no secret and prove possession with PKCE or the refresh token). It must name an active app.
 */
export const checkClientId: TokenCheck = {
  name: 'client_id',
  rule: 'RFC 6749 §3.2.1, §4.1.3, §5.2',
  async run(request, { sql }) {
    const clientId = request.params.client_id;
    if (!clientId) throw new InvalidRequest('client_id is required.');
    const app = await findTokenApp(sql, clientId);
    if (!app) throw new InvalidClient('client_id names no active application.');
    request.app = app;
  },
};
