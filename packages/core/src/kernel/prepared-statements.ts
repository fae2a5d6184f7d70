import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { PreparedStatements, SqlStatement, SqlValue } from '../ports/database.js';
import { sqlOperation, type TrellisMetrics } from './observability/metrics.js';
import { context, SpanKind, SpanStatusCode, trace, tracer } from './observability/tracing.js';

/** The database adapter's prepared-statement runner, once the database is connected. */
export const preparedStatementsServiceIdentifier: ServiceIdentifier<PreparedStatements> = Symbol.for('@trellis/core/PreparedStatements');

/**
 * Runs `statement` once with `statements.execute`, or, when the adapter's runner has none, through
 * MikroORM's public `Connection.execute` on `em`'s connection (in its transaction when it has one),
 * which formats the values into the SQL text as each dialect's ORM mapping stores them.
 */
export function executeStatement<R = Record<string, unknown>>(statements: PreparedStatements, statement: SqlStatement, params: readonly SqlValue[], em: EntityManager): Promise<R[]> {
  if (statements.execute) return statements.execute<R>(statement, params, em);
  const sqlite = statements.dialect === 'sqlite';
  const values = params.map((v): unknown => (sqlite && v instanceof Date ? v.getTime() : sqlite && typeof v === 'boolean' ? (v ? 1 : 0) : v));
  return em.getConnection('write').execute(statement.text, values, 'all', em.getTransactionContext()) as Promise<R[]>;
}

/**
 * The adapter's runner with each statement's duration recorded in `trellis_db_query_duration_seconds`,
 * as the ORM's statements are (see ObservingOrmLogger), and, inside a recording span (a traced
 * request or job), a client span `db <operation>` per statement, child of it: `db.system`,
 * `db.operation.name` and the statement's name in `trellis.db.statement` (never its text or
 * values). Outside a recording span no span is started, so the hot paths pay nothing for tracing
 * that is off.
 */
export function observedStatements(inner: PreparedStatements, metrics: TrellisMetrics): PreparedStatements {
  const system = inner.dialect;
  const operations = new Map<string, string>();
  const operation = (statement: SqlStatement) => {
    let found = operations.get(statement.name);
    if (found === undefined) operations.set(statement.name, (found = sqlOperation(statement.text)));
    return found;
  };
  const observe = async <T>(statement: SqlStatement, run: Promise<T>): Promise<T> => {
    const start = performance.now();
    const parent = trace.getSpan(context.active());
    const span = parent?.isRecording()
      ? tracer().startSpan(`db ${operation(statement)}`, {
          kind: SpanKind.CLIENT,
          attributes: { 'db.system': system, 'db.operation.name': operation(statement), 'trellis.db.statement': statement.name },
        })
      : undefined;
    let outcome = 'ok';
    try {
      return await run;
    } catch (error) {
      outcome = 'error';
      span?.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      metrics.dbQueryDuration.observe({ operation: operation(statement), outcome }, (performance.now() - start) / 1000);
      span?.end();
    }
  };
  return {
    dialect: inner.dialect,
    all: <R>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.all<R>(statement, params, em)),
    first: <R>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.first<R>(statement, params, em)),
    run: (statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.run(statement, params, em)),
    // Without the adapter's, executeStatement goes through MikroORM, whose logger records the statement.
    ...(inner.execute ? { execute: <R>(statement: SqlStatement, params?: readonly SqlValue[], em?: EntityManager) => observe(statement, inner.execute!<R>(statement, params, em)) } : {}),
  };
}
