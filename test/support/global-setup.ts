import pg from 'pg';
import { redisAnswers } from './redis-probe.js';

/**
 * When TRELLIS_TEST_POSTGRES_URL is set, PostgreSQL must be reachable: the suite fails here
 * rather than skipping the PostgreSQL half silently. Databases left by crashed runs are dropped.
 */
export default async function setup(): Promise<void> {
  // Every vitest project (unit, integration) runs the global setup; check and say things once.
  if (process.env['TRELLIS_TEST_SETUP_DONE']) return;
  process.env['TRELLIS_TEST_SETUP_DONE'] = '1';
  await checkRedis();
  const url = process.env.TRELLIS_TEST_POSTGRES_URL;
  if (!url) {
    console.warn('[trellis tests] TRELLIS_TEST_POSTGRES_URL is not set: integration suites run on SQLite only.');
    return;
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`TRELLIS_TEST_POSTGRES_URL is set but PostgreSQL is unreachable at ${url}: ${(error as Error).message}`);
  }
  try {
    // Test databases are named trellis_t_<pid>_<random>. Drop those whose process is gone (a
    // crashed run); leave those of live processes alone, since another run may be using them.
    const candidates = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'trellis\\_t\\_%'");
    for (const { datname } of candidates.rows) {
      const pid = Number(/^trellis_t_(\d+)_/.exec(datname)?.[1]);
      if (Number.isInteger(pid) && isAlive(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
  } finally {
    await client.end();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Same rule for Redis: unset → the suites that need it are skipped; set → it must answer. */
async function checkRedis(): Promise<void> {
  const url = process.env.TRELLIS_TEST_REDIS_URL;
  if (!url) {
    console.warn('[trellis tests] TRELLIS_TEST_REDIS_URL is not set: suites that need Redis are skipped.');
    return;
  }
  try {
    await redisAnswers(url);
  } catch (error) {
    throw new Error(`TRELLIS_TEST_REDIS_URL is set but Redis is unreachable at ${url}: ${(error as Error).message}`);
  }
}
