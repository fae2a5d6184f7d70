import type { JobDefinition } from '../../kernel/module.js';
import { OAuthAuthorizationCode } from './entities/authorization-code.entity.js';
import { OAuthToken } from './entities/oauth-token.entity.js';

const DAY_MS = 86_400_000;

/**
 * Deletes authorization codes a day after they expired, and tokens 30 days after they expired
 * (a rotated refresh token is kept that long so its replay is still recognised as reuse).
 */
export const purgeJob: JobDefinition = {
  name: 'oauth.purge',
  intervalMs: 3_600_000,
  async run({ em, now }) {
    await em.nativeDelete(OAuthAuthorizationCode, { expiresAt: { $lt: new Date(now.getTime() - DAY_MS) } });
    await em.nativeDelete(OAuthToken, { expiresAt: { $lt: new Date(now.getTime() - 30 * DAY_MS) } });
  },
};
