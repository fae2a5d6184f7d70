import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/** login_hint is optional; it only pre-fills the login form, so it is bounded like an email address. */
export const checkLoginHint: AuthorizationCheck = {
  name: 'login_hint',
  rule: 'spec GET /oauth/authorize (login_hint); OpenID Connect Core §3.1.2.1',
  run(request) {
    const hint = request.params.login_hint;
    if (hint === undefined) return;
    if (hint.length > 320) throw new InvalidRequest('login_hint is longer than 320 characters.');
    request.loginHint = hint;
  },
};
