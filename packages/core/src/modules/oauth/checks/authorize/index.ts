import type { AuthorizationCheck } from './authorization-request.js';
import { checkClient } from './check-client.js';
import { checkCodeChallengeMethod } from './check-code-challenge-method.js';
import { checkCodeChallenge } from './check-code-challenge.js';
import { checkDisplay } from './check-display.js';
import { checkLoginHint } from './check-login-hint.js';
import { checkPromptNone } from './check-prompt-none.js';
import { checkPrompt } from './check-prompt.js';
import { checkRedirectUri } from './check-redirect-uri.js';
import { checkResponseType } from './check-response-type.js';
import { checkScope } from './check-scope.js';
import { checkState } from './check-state.js';

/**
 * GET /oauth/authorize, in order. The first two establish the client and its redirect URI; an
 * error before that is shown to the user (400), after it is sent back to the client's redirect
 * URI (RFC 6749 §4.1.2.1). state is checked early so later errors can carry it.
 */
export const authorizationRequestChecks: readonly AuthorizationCheck[] = [
  checkClient,
  checkRedirectUri,
  checkState({ required: true }),
  checkResponseType,
  checkCodeChallenge,
  checkCodeChallengeMethod,
  checkScope,
  checkDisplay,
  checkPrompt,
  checkLoginHint,
  checkPromptNone,
];

/**
 * POST /oauth/authorize, sent by the consent page for the signed-in user: the same rules for the
 * parameters it carries, all answered as 400 (the caller is the page, not a redirect).
 */
export const consentChecks: readonly AuthorizationCheck[] = [
  checkClient,
  checkRedirectUri,
  checkState({ required: false }),
  checkCodeChallenge,
  checkCodeChallengeMethod,
  checkScope,
];

export { newAuthorizationRequest, type AuthorizationCheck, type AuthorizationCheckContext, type AuthorizationParams, type AuthorizationRequest, type PromptValue } from './authorization-request.js';
export { isValidState } from './check-state.js';
