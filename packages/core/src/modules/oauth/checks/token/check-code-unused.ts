import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/**
 * A code is single use. A second use is refused and revokes every token the first use issued
 * (the token family chosen with the code). The exchange itself claims the code with a
 * conditional update, so two concurrent exchanges cannot both pass.
 */
export const checkCodeUnused: TokenCheck = {
  name: 'code not used before',
  rule: 'RFC 6749 §4.1.2, §10.5; RFC 9700 §4.5',
  async run(request, ctx) {
    const code = request.code!;
    if (code.consumedAt) {
      await ctx.onReuse('authorization_code', code.tokenFamilyId, request);
      throw new InvalidGrant(invalidCodeDescription);
    }
    request.scopes = code.scope.split(' ');
  },
};
