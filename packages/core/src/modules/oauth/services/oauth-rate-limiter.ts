import { inject, injectable } from 'inversify';
import { rateLimiterServiceIdentifier, type RateLimiter } from '../../../ports/rate-limiter.js';
import { oauthConfigServiceIdentifier, type OAuthConfig } from '../config.js';
import { clientIdPattern } from '../dto/admin.dto.js';
import { TemporarilyUnavailable } from '../oauth-errors.js';

export type RateLimitedEndpoint = 'authorize' | 'token' | 'revoke' | 'register';

/**
 * Per-address and per-client limits on the authorization, token and revocation endpoints
 * (`oauth.rateLimit`), counted by the RateLimiter port (in process, or Redis when bound). Over
 * the limit: 429 `temporarily_unavailable` with `Retry-After`.
 */
@injectable()
export class OAuthRateLimiter {
  constructor(
    @inject(rateLimiterServiceIdentifier) private readonly limiter: RateLimiter,
    @inject(oauthConfigServiceIdentifier) private readonly config: OAuthConfig,
  ) {}

  async check(endpoint: RateLimitedEndpoint, ip: string, clientId: string | undefined): Promise<void> {
    const { enabled, windowSeconds, perIp, perClient } = this.config.rateLimit;
    if (!enabled) return;
    const windowMs = windowSeconds * 1000;
    const hits = [this.limiter.hit(`oauth:${endpoint}:ip:${ip}`, perIp, windowMs)];
    // Only well-formed client_ids get a counter, so junk values cannot create unbounded keys.
    if (clientId && clientIdPattern.test(clientId)) hits.push(this.limiter.hit(`oauth:${endpoint}:client:${clientId}`, perClient, windowMs));
    const refused = (await Promise.all(hits)).filter((decision) => !decision.allowed);
    if (refused.length > 0) {
      const retryAfter = Math.max(1, Math.ceil(Math.max(...refused.map((d) => d.resetMs)) / 1000));
      throw new TemporarilyUnavailable(`Too many requests to the ${endpoint} endpoint; retry in ${retryAfter} s.`, retryAfter);
    }
  }
}
