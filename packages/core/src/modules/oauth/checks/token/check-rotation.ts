import { InvalidGrant } from '../../oauth-errors.js';
import { invalidRefreshDescription, type TokenCheck } from './token-request.js';

/**
 * Refresh tokens are single use and rotate. Presenting a token that was already rotated is reuse:
 * the whole family is revoked (its access tokens are refused at once) and the answer is the same
 * `invalid_grant` as for any invalid token. Within `oauth.refreshGraceSeconds` of the rotation, a
 * second exchange is taken as a benign double refresh instead. Any other revoked token is simply
 * invalid. Concurrent rotations are settled by the conditional update in the token service.
 */
export const checkRotation: TokenCheck = {
  name: 'refresh token not reused',
  rule: 'RFC 6749 §10.4; RFC 9700 §4.14.2',
  async run(request, ctx) {
    const token = request.refreshToken!;
    if (token.revokedReason === 'rotated' && token.revokedAt) {
      const family = token.tokenFamily;
      const withinGrace = ctx.graceMs > 0 && ctx.now.getTime() - token.revokedAt.getTime() <= ctx.graceMs && !family.revokedAt;
      if (withinGrace) {
        request.graceReplay = true;
        return;
      }
      await ctx.onReuse('refresh_token', family.id, request);
      throw new InvalidGrant(invalidRefreshDescription);
    }
    if (token.revokedAt) throw new InvalidGrant(invalidRefreshDescription);
  },
};
