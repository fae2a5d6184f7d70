import { InvalidRequest, UnsupportedResponseType } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/** response_type is required and must be `code`: the only grant here is the authorization code. */
export const checkResponseType: AuthorizationCheck = {
  name: 'response_type',
  rule: 'RFC 6749 §3.1.1, §4.1.1, §4.1.2.1',
  run(request) {
    const type = request.params.response_type;
    if (!type) throw new InvalidRequest('response_type is required.');
    if (type !== 'code') throw new UnsupportedResponseType('Only response_type=code is supported.');
  },
};
