import { InvalidClient, InvalidRequest } from '../../oauth-errors.js';
import { findActiveApp } from '../../services/oauth-app.service.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * client_id is required and names an app that is neither disabled nor deleted. The error is
 * shown, never redirected: without a client there is no redirect URI to trust.
 */
export const checkClient: AuthorizationCheck = {
  name: 'client',
  rule: 'RFC 6749 §4.1.1, §4.1.2.1',
  async run(request, { em }) {
    const clientId = request.params.client_id;
    if (!clientId) throw new InvalidRequest('client_id is required.');
    const app = await findActiveApp(em, clientId);
    if (!app) throw new InvalidClient('client_id names no active application.');
    request.app = app;
  },
};
