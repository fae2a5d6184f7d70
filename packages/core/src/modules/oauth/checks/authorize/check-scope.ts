import { InvalidScope } from '../../oauth-errors.js';
import { MOBILE_FULL_SCOPE, parseScope } from '../../scopes.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * scope is optional: omitted means every scope of the app. Each requested scope must be
 * well-formed, known to the server and registered for the app; mobile:full is further limited to
 * the configured production and sandbox client_ids (spec: native mobile apps).
 */
export const checkScope: AuthorizationCheck = {
  name: 'scope',
  rule: 'RFC 6749 §3.3, §4.1.2.1',
  run(request, { catalogue, mobileClientIds }) {
    const app = request.app!;
    const raw = request.params.scope;
    const scopes = raw === undefined ? [...app.scopes] : parseScope(raw);
    if (!scopes) throw new InvalidScope('scope must be space-separated scope tokens.');
    if (scopes.length === 0) throw new InvalidScope('scope names no scope.');
    for (const scope of scopes) {
      if (!(scope in catalogue)) throw new InvalidScope(`Unknown scope ${scope}.`);
      if (!app.scopes.includes(scope)) throw new InvalidScope(`The application may not request the scope ${scope}.`);
      if (scope === MOBILE_FULL_SCOPE && !mobileClientIds.has(app.clientId)) {
        throw new InvalidScope(`${MOBILE_FULL_SCOPE} is reserved for the official mobile apps.`);
      }
    }
    request.scopes = scopes;
  },
};
