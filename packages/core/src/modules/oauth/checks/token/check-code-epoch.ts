import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/**
 * The app's scopes, redirect URIs or status have not changed since the code was issued: such a
 * change revokes every grant of the app, codes still in flight included.
 */
export const checkCodeEpoch: TokenCheck = {
  name: 'code not revoked by an app change',
  rule: 'spec States (OAuth app: scopes or redirect_uris change revokes all tokens)',
  run({ code, app }) {
    if (code!.appEpoch !== app!.tokenEpoch) throw new InvalidGrant(invalidCodeDescription);
  },
};
