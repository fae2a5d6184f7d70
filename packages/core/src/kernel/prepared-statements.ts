import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { PreparedStatements, SqlStatement, SqlValue } from '../ports/database.js';
import { sqlOperation, type TrellisMetrics } from './observability/metrics.js';

/** The database adapter's prepared-statement runner, once the database is connected. */
export const preparedStatementsServiceIdentifier: ServiceIdentifier<PreparedStatements> = Symbol.for('@trellis/core/PreparedStatements');

/**
 * The adapter's runner with each statement's duration recorded in `trellis_db_query_duration_seconds`,
 * as the ORM's statements are (see ObservingOrmLogger).
 */
export function observedStatements(inner: PreparedStatements, metrics: TrellisMetrics): PreparedStatements {
  const operations = new Map<string, string>();
  const operation = (statement: SqlStatement) => {
    let found = operations.get(statement.name);
    if (found === undefined) operations.set(statement.name, (found = sqlOperation(statement.text)));
    return found;
  };
  const observe = async <T>(statement: SqlStatement, run: Promise<T>): Promise<T> => {
    const start = performance.now();
    let outcome = 'ok';
    try {
      return await run;
    } catch (error) {
      outcome = 'error';
      throw error;
    } finally {
      metrics.dbQueryDuration.observe({ operation: operation(statement), outcome }, (performance.now() - start) / 1000);
    }
  };
  return {
    dialect: inner.dialect,
    all: <R>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.all<R>(statement, params, em)),
    first: <R>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.first<R>(statement, params, em)),
    run: (statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.run(statement, params, em)),
  };
}
