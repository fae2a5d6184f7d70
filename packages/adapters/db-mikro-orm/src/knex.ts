import type { MikroORM } from '@mikro-orm/core';

/** tarn's pool (knex 3 keeps one per client): the counters read here. */
export interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  /** The idle connections, oldest first. */
  free: ReadonlyArray<{ resource: object }>;
}

/**
 * knex's client, or a transaction's client: hands out the ORM's driver connections (a `pg` client,
 * a `sqlite3` or `better-sqlite3` database). A transaction's client always hands out the
 * transaction's connection.
 */
export interface KnexClient<C extends object = object> {
  acquireConnection(): Promise<C>;
  releaseConnection(connection: C): Promise<unknown> | unknown;
  /** The pool (absent on a transaction's client). */
  pool?: TarnPool;
}

/**
 * The knex client under MikroORM 6's SQL connection (`getKnex()` of `@mikro-orm/knex`'s
 * `AbstractSqlConnection`; MikroORM 7 has Kysely instead).
 */
export function knexClient<C extends object = object>(orm: MikroORM): KnexClient<C> {
  const connection = orm.em.getConnection() as unknown as { getKnex?: () => { client?: KnexClient<C> } };
  const client = typeof connection.getKnex === 'function' ? connection.getKnex().client : undefined;
  if (!client || typeof client.acquireConnection !== 'function') throw new Error('This MikroORM connection has no knex client (the adapter supports MikroORM 6 with knex 3).');
  return client;
}

/**
 * The client to run a statement with: the transaction's (`em.getTransactionContext()`, a knex
 * transaction) when there is one, else the pool's.
 */
export function knexClientFor<C extends object = object>(orm: MikroORM, transaction: unknown): KnexClient<C> {
  const trx = transaction as { client?: KnexClient<C> } | undefined;
  return trx?.client ?? knexClient<C>(orm);
}

/** What the connection pool holds now (the port's `DatabasePoolState`). */
export interface PoolStats {
  used: number;
  free: number;
  pending: number;
}

/** The state of knex's tarn pool under the ORM, or undefined when it has none yet. */
export function knexPoolStats(orm: MikroORM): PoolStats | undefined {
  const pool = knexClient(orm).pool;
  if (!pool) return undefined;
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() };
}
