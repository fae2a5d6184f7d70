import { InteractionRequired } from '../../oauth-errors.js';
import type { AuthorizationCheck } from './authorization-request.js';

/**
 * prompt=none asks for no user interface. Trellis always needs the user's confirmation, so in
 * redirect mode the answer is always `interaction_required`, sent back to the client. In popup
 * mode the request goes on to the consent page, which posts the same error to the opener.
 */
export const checkPromptNone: AuthorizationCheck = {
  name: 'prompt_none',
  rule: 'OpenID Connect Core §3.1.2.6; spec GET /oauth/authorize (prompt none)',
  run(request) {
    if (request.prompt.has('none') && request.display !== 'popup') {
      throw new InteractionRequired('prompt=none was requested, but authorizing needs the user to sign in and confirm.');
    }
  },
};
