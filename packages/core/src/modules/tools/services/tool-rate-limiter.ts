import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { rateLimiterServiceIdentifier, type RateLimiter } from '../../../ports/rate-limiter.js';
import { toolsConfigServiceIdentifier, type ToolsConfig } from '../config.js';

/** Rate limits of the tool-service OAuth endpoints, per client address and per anonymous identifier. */
@injectable()
export class ToolRateLimiter {
  constructor(
    @inject(rateLimiterServiceIdentifier) private readonly limiter: RateLimiter,
    @inject(toolsConfigServiceIdentifier) private readonly config: ToolsConfig,
  ) {}

  async check(endpoint: 'anonymous' | 'token' | 'rtoken', ip: string, identifier?: string): Promise<void> {
    const { windowSeconds, perIp, perIdentifier } = this.config.anonymous.rateLimit;
    const windowMs = windowSeconds * 1000;
    const hits = [this.limiter.hit(`tool-oauth:${endpoint}:ip:${ip}`, perIp, windowMs)];
    if (identifier) hits.push(this.limiter.hit(`tool-oauth:${endpoint}:id:${identifier}`, perIdentifier, windowMs));
    const refused = (await Promise.all(hits)).filter((decision) => !decision.allowed);
    if (refused.length) {
      const retryAfter = Math.max(1, Math.ceil(Math.max(...refused.map((decision) => decision.resetMs)) / 1000));
      throw new TrellisError('rate_limited', 'rate_limited', `Too many requests to /tool/home/oauth/${endpoint}; retry in ${retryAfter} s.`, { headers: { 'retry-after': String(retryAfter) } });
    }
  }
}
