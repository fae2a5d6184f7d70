import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { PreparedStatements, SqlStatement, SqlValue } from '@trellis/core';
import { knexClientFor } from '@trellis/db-mikro-orm';

/**
 * `pg`'s `Client`: a query with a `name` is parsed once per connection and reused (a named prepared
 * statement); one without is parsed for that run only.
 */
interface PgClient {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** `?` placeholders to `$1`, `$2`, ...: statements use `?` only as placeholders. */
function numbered(text: string): string {
  let index = 0;
  return text.replace(/\?/g, () => `$${++index}`);
}

/**
 * Named prepared statements on the ORM's PostgreSQL pool: `pg` prepares a named statement on a
 * connection the first time it runs there and reuses it after (`execute` runs unnamed statements). The connection is taken from
 * knex's pool for one statement or, for an entity manager in a transaction, is the transaction's.
 */
export function postgresStatements(orm: MikroORM): PreparedStatements {
  const texts = new Map<string, string>();

  async function execute(statement: SqlStatement, params: readonly SqlValue[], em?: EntityManager, once = false) {
    let text = once ? numbered(statement.text) : texts.get(statement.name);
    if (text === undefined) texts.set(statement.name, (text = numbered(statement.text)));
    const source = knexClientFor<PgClient>(orm, em?.getTransactionContext());
    const connection = await source.acquireConnection();
    try {
      return await connection.query(once ? { text, values: params as unknown[] } : { name: `trellis:${statement.name}`, text, values: params as unknown[] });
    } finally {
      await source.releaseConnection(connection);
    }
  }

  return {
    dialect: 'postgresql',
    all: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rows as R[],
    first: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rows[0] as R | undefined,
    run: async (statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rowCount ?? 0,
    execute: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em, true)).rows as R[],
  };
}
