import { sha256Hex } from '../../../../kernel/crypto.js';
import { OAuthAuthorizationCode } from '../../entities/authorization-code.entity.js';
import { InvalidGrant } from '../../oauth-errors.js';
import { invalidCodeDescription, type TokenCheck } from './token-request.js';

/** The code must be one this server issued; it is looked up by its SHA-256 digest only. */
export const findCode: TokenCheck = {
  name: 'code exists',
  rule: 'RFC 6749 §4.1.3, §5.2 (invalid_grant)',
  async run(request, { em }) {
    const code = await em.findOne(OAuthAuthorizationCode, { codeHash: sha256Hex(request.params.code!) }, { populate: ['user'] });
    if (!code) throw new InvalidGrant(invalidCodeDescription);
    request.code = code;
  },
};
