import { extractBearer } from '../auth/authenticator.js';
import type { KernelConfig } from '../config/config.js';
import { safeEqual } from '../crypto.js';
import { TrellisError } from '../errors.js';
import { Reply } from '../http/reply.js';
import { defineRoute, type RouteDefinition } from '../http/route.js';
import { Type } from '../http/response-schema.js';
import { metricsServiceIdentifier, type TrellisMetrics } from './metrics.js';

/**
 * Checks the bearer token `/metrics` may require; throws 401 `missing_credentials` or
 * `invalid_token`. Shared by the route and the host's separate metrics port.
 */
export function checkMetricsToken(expected: string | undefined, headers: Record<string, string>): void {
  if (expected === undefined) return;
  const token = extractBearer(headers);
  if (!token) throw new TrellisError('unauthenticated', 'missing_credentials', 'The metrics endpoint needs the bearer token set in metrics.token.', { headers: { 'www-authenticate': 'Bearer' } });
  if (!safeEqual(token, expected)) throw new TrellisError('unauthenticated', 'invalid_token', 'The bearer token is not the metrics token.', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
}

/** The exposition of one kernel's registry as a raw reply. */
export async function metricsReply(metrics: TrellisMetrics): Promise<Reply> {
  return Reply.raw(await metrics.render(), metrics.contentType, 200, { 'cache-control': 'no-store' });
}

/** `GET /metrics` in the main route table, unless metrics are off or served on their own port. */
export function metricsRoutes(config: Pick<KernelConfig, 'metrics'>): RouteDefinition[] {
  const { enabled, port, token } = config.metrics;
  if (!enabled || port !== undefined) return [];
  return [
    defineRoute({
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics of this process',
      description:
        'Prometheus text exposition format 0.0.4: HTTP requests by route pattern and status, WebSocket connections, pushes, collaboration messages, database statements, jobs, and what modules register. Needs `Authorization: Bearer <metrics.token>` when `metrics.token` is set.',
      tags: ['System'],
      auth: 'none',
      alwaysAvailable: true,
      response: { contentType: 'text/plain; version=0.0.4', description: 'Metrics in the Prometheus text format', schema: Type.String() },
      errors: token === undefined ? {} : { 401: 'No bearer token, or not the metrics token (`missing_credentials`, `invalid_token`)' },
      async handler(ctx) {
        checkMetricsToken(token, ctx.headers);
        return metricsReply(ctx.get(metricsServiceIdentifier));
      },
    }),
  ];
}
