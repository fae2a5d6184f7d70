import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/** display is optional; the only supported value is `popup` (spec, after OpenID Connect Core §3.1.2.1). */
export const checkDisplay: AuthorizationCheck = {
  name: 'display',
  rule: 'spec GET /oauth/authorize (display); OpenID Connect Core §3.1.2.1',
  run(request) {
    const display = request.params.display;
    if (display === undefined) return;
    if (display !== 'popup') throw new InvalidRequest('display supports only popup.');
    request.display = 'popup';
  },
};
