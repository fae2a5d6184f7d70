import { checkClientId } from './check-client-id.js';
import { checkCodeClient } from './check-code-client.js';
import { checkCodeEpoch } from './check-code-epoch.js';
import { checkCodeExpiry } from './check-code-expiry.js';
import { checkCodeParams } from './check-code-params.js';
import { checkCodeRedirectUri } from './check-code-redirect-uri.js';
import { checkCodeUnused } from './check-code-unused.js';
import { checkCodeUser } from './check-code-user.js';
import { checkCodeVerifier } from './check-code-verifier.js';
import { checkRefreshClient } from './check-refresh-client.js';
import { checkRefreshParams } from './check-refresh-params.js';
import { checkRefreshScope } from './check-refresh-scope.js';
import { checkRefreshValidity } from './check-refresh-validity.js';
import { checkRotation } from './check-rotation.js';
import { findCode } from './find-code.js';
import { findRefreshToken } from './find-refresh-token.js';
import type { TokenCheck } from './token-request.js';

/**
 * grant_type=authorization_code, in order: the request's shape first (no lookup), then the code
 * and what it is bound to, PKCE, and last whether it was used before (so only the holder of the
 * verifier can set off reuse handling).
 */
export const authorizationCodeChecks: readonly TokenCheck[] = [
  checkClientId,
  checkCodeParams,
  findCode,
  checkCodeClient,
  checkCodeExpiry,
  checkCodeRedirectUri,
  checkCodeVerifier,
  checkCodeEpoch,
  checkCodeUser,
  checkCodeUnused,
];

/**
 * grant_type=refresh_token, in order. Reuse of a rotated token is checked before expiry, so a
 * replayed token still revokes its family however old it is.
 */
export const refreshTokenChecks: readonly TokenCheck[] = [
  checkClientId,
  checkRefreshParams,
  findRefreshToken,
  checkRefreshClient,
  checkRotation,
  checkRefreshValidity,
  checkRefreshScope,
];

export { invalidCodeDescription, invalidRefreshDescription, type ReuseKind, type TokenCheck, type TokenCheckContext, type TokenParams, type TokenRequest } from './token-request.js';
