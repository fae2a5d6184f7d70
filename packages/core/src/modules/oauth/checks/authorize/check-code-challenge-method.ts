import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * code_challenge_method is required and must be `S256`: `plain` (and the RFC's default of plain
 * when the method is omitted) is refused, so no downgrade is possible (RFC 9700 §4.8). An
 * unsupported method is `invalid_request` (RFC 7636 §4.4.1).
 */
export const checkCodeChallengeMethod: AuthorizationCheck = {
  name: 'code_challenge_method',
  rule: 'RFC 7636 §4.3, §4.4.1; RFC 9700 §4.8',
  run(request) {
    const method = request.params.code_challenge_method;
    if (!method) throw new InvalidRequest('code_challenge_method is required and must be S256.');
    if (method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256.');
  },
};
