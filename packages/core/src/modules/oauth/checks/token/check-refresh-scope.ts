import { InvalidScope } from '../../oauth-errors.js';
import { parseScope } from '../../scopes.js';
import type { TokenCheck } from './token-request.js';

/**
 * scope is optional on refresh: omitted means everything the family was granted; otherwise it
 * may only narrow that grant.
 */
export const checkRefreshScope: TokenCheck = {
  name: 'refresh scope within the grant',
  rule: 'RFC 6749 §6',
  run(request) {
    const granted = request.refreshToken!.tokenFamily.scope.split(' ');
    const raw = request.params.scope;
    if (raw === undefined) {
      request.scopes = granted;
      return;
    }
    const scopes = parseScope(raw);
    if (!scopes || scopes.length === 0) throw new InvalidScope('scope must be space-separated scope tokens.');
    for (const scope of scopes) {
      if (!granted.includes(scope)) throw new InvalidScope(`The scope ${scope} was not granted.`);
    }
    request.scopes = scopes;
  },
};
