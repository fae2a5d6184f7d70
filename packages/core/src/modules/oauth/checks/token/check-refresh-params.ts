import { InvalidRequest } from '../../oauth-errors.js';
import type { TokenCheck } from './token-request.js';

/** refresh_token is required. */
export const checkRefreshParams: TokenCheck = {
  name: 'refresh_token parameters',
  rule: 'RFC 6749 §6',
  run({ params }) {
    if (!params.refresh_token) throw new InvalidRequest('refresh_token is required.');
  },
};
