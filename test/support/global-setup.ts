import pg from 'pg';

/**
 * When TRELLIS_TEST_POSTGRES_URL is set, PostgreSQL must be reachable: the suite fails here
 * rather than skipping the PostgreSQL half silently. Databases left by crashed runs are dropped.
 */
export default async function setup(): Promise<void> {
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
    const stale = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'trellis_t_%' AND datname NOT LIKE 'trellis_t_' || $1 || '%'",
      [String(process.pid)],
    );
    for (const { datname } of stale.rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
  } finally {
    await client.end();
  }
}
