import { DefaultLogger, type LogContext, type LoggerOptions } from '@mikro-orm/core';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { sqlOperation, type TrellisMetrics } from './metrics.js';
import { tracer } from './tracing.js';

/**
 * MikroORM calls its logger's `logQuery` after every statement with the time it took, whether or
 * not query logging is on: the one place every database call passes. This logger records the
 * duration histogram and a client span (ended as the statement did, started `took` ms earlier,
 * child of the active request or job span), then logs as the default logger would. Neither the
 * SQL text nor its parameters leave the process: only the operation keyword.
 */
export class ObservingOrmLogger extends DefaultLogger {
  constructor(
    options: LoggerOptions,
    private readonly metrics: TrellisMetrics | undefined,
    private readonly system: string,
  ) {
    super(options);
  }

  override logQuery(context: { query: string } & LogContext): void {
    if (context.took !== undefined && context.query) {
      const operation = sqlOperation(context.query);
      const failed = context.level === 'error';
      this.metrics?.dbQueryDuration.observe({ operation, outcome: failed ? 'error' : 'ok' }, context.took / 1000);
      const end = Date.now();
      const span = tracer().startSpan(`db ${operation}`, {
        kind: SpanKind.CLIENT,
        startTime: end - context.took,
        attributes: { 'db.system': this.system, 'db.operation.name': operation },
      });
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(end);
    }
    super.logQuery(context);
  }
}
