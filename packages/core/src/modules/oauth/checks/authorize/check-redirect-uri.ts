import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * redirect_uri is required and must equal one of the app's registered URIs character for
 * character: no prefix, pattern or normalisation (RFC 9700 §4.1.3 exact string matching). A
 * mismatch is shown, never redirected, so the endpoint cannot become an open redirector
 * (RFC 9700 §4.11).
 */
export const checkRedirectUri: AuthorizationCheck = {
  name: 'redirect_uri',
  rule: 'RFC 6749 §3.1.2.3, §4.1.2.1; RFC 9700 §4.1.3',
  run(request) {
    const uri = request.params.redirect_uri;
    if (!uri) throw new InvalidRequest('redirect_uri is required.');
    if (!request.app!.redirectUris.includes(uri)) throw new InvalidRequest('redirect_uri is not registered for this application.');
    request.redirectUri = uri;
  },
};
