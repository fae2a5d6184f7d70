import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { PreparedStatements, SqlStatement, SqlValue } from '@trellis/core';

/** knex's client (or a transaction's client), which hands out pooled `pg` clients. */
interface ConnectionSource {
  acquireConnection(): Promise<PgClient>;
  releaseConnection(connection: PgClient): Promise<unknown> | unknown;
}

/** `pg`'s `Client`: a query with a `name` is parsed once per connection and reused (a named prepared statement). */
interface PgClient {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** `?` placeholders to `$1`, `$2`, ...: statements use `?` only as placeholders. */
function numbered(text: string): string {
  let index = 0;
  return text.replace(/\?/g, () => `$${++index}`);
}

/**
 * Named prepared statements on the ORM's PostgreSQL pool: `pg` prepares a named statement on a
 * connection the first time it runs there and reuses it after. The connection is taken from
 * knex's pool for one statement or, for an entity manager in a transaction, is the transaction's.
 */
export function postgresStatements(orm: MikroORM): PreparedStatements {
  const texts = new Map<string, string>();
  const root = (): ConnectionSource => (orm.em.getConnection() as unknown as { getKnex(): { client: ConnectionSource } }).getKnex().client;

  async function execute(statement: SqlStatement, params: readonly SqlValue[], em?: EntityManager) {
    let text = texts.get(statement.name);
    if (text === undefined) texts.set(statement.name, (text = numbered(statement.text)));
    const trx = em?.getTransactionContext<{ client: ConnectionSource }>();
    const source = trx ? trx.client : root();
    const connection = await source.acquireConnection();
    try {
      return await connection.query({ name: `trellis:${statement.name}`, text, values: params as unknown[] });
    } finally {
      await source.releaseConnection(connection);
    }
  }

  return {
    dialect: 'postgresql',
    all: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rows as R[],
    first: async <R>(statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rows[0] as R | undefined,
    run: async (statement: SqlStatement, params: readonly SqlValue[] = [], em?: EntityManager) => (await execute(statement, params, em)).rowCount ?? 0,
  };
}
