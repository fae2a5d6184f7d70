import { inject, injectable } from 'inversify';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import { configServiceIdentifier } from '../../../kernel/tokens.js';
import { rateLimiterServiceIdentifier, type RateLimiter } from '../../../ports/rate-limiter.js';
import { normaliseEmail } from './user.service.js';

export type ThrottledAuthAction = 'login' | 'register';

/**
 * Throttles password logins and registrations per client address and per account (the email),
 * before any password is hashed, through the RateLimiter port (`auth.rateLimit`). A refusal is
 * 429 `too_many_attempts` with `Retry-After`. Account keys hold a digest of the email, not the email.
 */
@injectable()
export class AuthRateLimiter {
  private readonly settings: TrellisConfig['auth']['rateLimit'];

  constructor(
    @inject(rateLimiterServiceIdentifier) private readonly limiter: RateLimiter,
    @inject(configServiceIdentifier) config: TrellisConfig,
  ) {
    this.settings = config.auth.rateLimit;
  }

  async check(action: ThrottledAuthAction, ip: string, email: string): Promise<void> {
    const { enabled, windowSeconds, perIp, perAccount } = this.settings;
    if (!enabled) return;
    const windowMs = windowSeconds * 1000;
    const account = sha256Hex(normaliseEmail(email)).slice(0, 32);
    const decisions = await Promise.all([
      this.limiter.hit(`auth:${action}:ip:${ip}`, perIp, windowMs),
      this.limiter.hit(`auth:${action}:account:${account}`, perAccount, windowMs),
    ]);
    const refused = decisions.filter((decision) => !decision.allowed);
    if (refused.length === 0) return;
    const retryAfter = Math.max(1, Math.ceil(Math.max(...refused.map((d) => d.resetMs)) / 1000));
    throw new TrellisError('rate_limited', 'too_many_attempts', `Too many ${action === 'login' ? 'login' : 'registration'} attempts; retry in ${retryAfter} s.`, {
      headers: { 'retry-after': String(retryAfter) },
    });
  }
}
