import { describe, it } from 'vitest';

/**
 * Redis for the suites that need it, on the same rule as PostgreSQL: unset → those suites are
 * skipped (global setup prints one line saying so, and each shows as skipped with the reason);
 * set but unreachable → global setup fails the run.
 */
export const testRedisUrl: string | undefined = process.env.TRELLIS_TEST_REDIS_URL || undefined;

const reason = 'TRELLIS_TEST_REDIS_URL is not set';

/** `describe` for a suite that needs Redis; without it, the suite (and its setup) never runs. */
export function describeWithRedis(name: string, body: (url: string) => void): void {
  if (testRedisUrl) describe(name, () => body(testRedisUrl));
  else describe.skip(`${name} (skipped: ${reason})`, () => it.skip(reason, () => undefined));
}

/** `it` for one test that needs Redis inside a suite that otherwise does not. */
export function itWithRedis(name: string, body: (url: string) => Promise<void>, timeout?: number): void {
  if (testRedisUrl) it(name, () => body(testRedisUrl), timeout);
  else it.skip(`${name} (skipped: ${reason})`, () => undefined);
}

export { redisAnswers } from './redis-probe.js';
