import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/** The spec's limit: 8 to 256 unreserved characters (RFC 3986 §2.3). */
const statePattern = /^[A-Za-z0-9\-._~]{8,256}$/;

export const isValidState = (state: string): boolean => statePattern.test(state);

/**
 * state carries the client's CSRF protection (RFC 9700 §4.7.1); the spec requires it at the
 * authorization endpoint, 8 to 256 characters of A-Z a-z 0-9 - . _ ~. The consent call may omit
 * it (`required: false`). A malformed state is not echoed.
 */
export function checkState(options: { required: boolean }): AuthorizationCheck {
  return {
    name: 'state',
    rule: 'RFC 6749 §4.1.1; RFC 9700 §4.7.1; spec Limits (OAuth state length)',
    run(request) {
      const state = request.params.state;
      if (state === undefined) {
        if (options.required) throw new InvalidRequest('state is required.');
        return;
      }
      if (!isValidState(state)) throw new InvalidRequest('state must be 8 to 256 characters of A-Z a-z 0-9 - . _ ~.');
      request.state = state;
    },
  };
}
