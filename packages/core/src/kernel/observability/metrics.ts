import type { ServiceIdentifier } from 'inversify';
import type { DatabasePoolState } from '../../ports/database.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

export type { DatabasePoolState };

/** What a module passes to register one metric. Names should start with `trellis_`. */
export interface MetricOptions<L extends string = string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

export interface HistogramOptions<L extends string = string> extends MetricOptions<L> {
  /** Upper bounds in the metric's unit (seconds for durations). */
  buckets?: number[];
}

/** Request duration buckets, in seconds: 5 ms to 10 s. */
export const durationBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Database statement buckets, in seconds: 1 ms to 5 s. */
export const queryBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/**
 * The kernel's Prometheus registry and the metrics it keeps itself. One per kernel (never
 * prom-client's global registry), so two kernels in one process count apart.
 *
 * Modules register their own metrics through `counter`, `gauge` and `histogram`; asking twice for
 * the same name returns the metric registered first (so a service constructed twice shares it).
 */
export class TrellisMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;

  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly httpResponseBytes: Counter<'method' | 'route' | 'status'>;
  readonly websocketConnections: Gauge<'channel'>;
  readonly websocketOpened: Counter<'channel'>;
  readonly pushes: Counter<'kind'>;
  readonly collabMessages: Counter;
  readonly dbQueryDuration: Histogram<'operation' | 'outcome'>;
  readonly jobRuns: Counter<'job' | 'outcome'>;
  readonly jobDuration: Histogram<'job'>;

  constructor(options: { defaultMetrics?: boolean; inFlight?: () => number; databasePool?: () => DatabasePoolState | undefined } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.httpRequests = this.counter({ name: 'trellis_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status.', labelNames: ['method', 'route', 'status'] });
    this.httpDuration = this.histogram({
      name: 'trellis_http_request_duration_seconds',
      help: 'Time from receiving a request to the end of its response body, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: durationBuckets,
    });
    this.httpResponseBytes = this.counter({ name: 'trellis_http_response_bytes_total', help: 'Response body bytes sent, by method, route pattern and status.', labelNames: ['method', 'route', 'status'] });
    const inFlight = options.inFlight;
    this.gauge({
      name: 'trellis_http_requests_in_flight',
      help: 'Requests (and response streams) being handled now.',
      collect() {
        if (inFlight) this.set(inFlight());
      },
    });
    const databasePool = options.databasePool;
    this.gauge({
      name: 'trellis_db_pool_connections',
      help: 'Database connections of the pool, by state (used, free, pending acquisitions).',
      labelNames: ['state'],
      collect() {
        const pool = databasePool?.();
        if (!pool) return;
        this.set({ state: 'used' }, pool.used);
        this.set({ state: 'free' }, pool.free);
        this.set({ state: 'pending' }, pool.pending);
      },
    });
    this.websocketConnections = this.gauge({ name: 'trellis_websocket_connections', help: 'Open WebSocket connections, by channel.', labelNames: ['channel'] });
    this.websocketOpened = this.counter({ name: 'trellis_websocket_connections_opened_total', help: 'WebSocket connections accepted, by channel.', labelNames: ['channel'] });
    this.pushes = this.counter({ name: 'trellis_realtime_pushes_total', help: 'Realtime pushes published, by target kind (user, application, hardware).', labelNames: ['kind'] });
    this.collabMessages = this.counter({ name: 'trellis_collab_messages_total', help: 'Collaboration messages (document updates, awareness, sync) published to other processes.' });
    this.dbQueryDuration = this.histogram({
      name: 'trellis_db_query_duration_seconds',
      help: 'Database statement durations, by operation (select, insert, update, delete, other) and outcome.',
      labelNames: ['operation', 'outcome'],
      buckets: queryBuckets,
    });
    this.jobRuns = this.counter({ name: 'trellis_job_runs_total', help: 'Background job runs, by job and outcome (ok, failed).', labelNames: ['job', 'outcome'] });
    this.jobDuration = this.histogram({ name: 'trellis_job_duration_seconds', help: 'Background job run durations, by job.', labelNames: ['job'], buckets: durationBuckets });
  }

  counter<L extends string>(options: MetricOptions<L>): Counter<L> {
    return this.existing(options.name, Counter) ?? new Counter({ ...options, labelNames: options.labelNames ?? [], registers: [this.registry] });
  }

  gauge<L extends string>(options: MetricOptions<L> & { collect?: (this: Gauge<L>) => void | Promise<void> }): Gauge<L> {
    return this.existing(options.name, Gauge) ?? new Gauge({ ...options, labelNames: options.labelNames ?? [], registers: [this.registry] });
  }

  histogram<L extends string>(options: HistogramOptions<L>): Histogram<L> {
    return (
      this.existing(options.name, Histogram) ??
      new Histogram({ ...options, labelNames: options.labelNames ?? [], buckets: options.buckets ?? durationBuckets, registers: [this.registry] })
    );
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  private existing<T extends Metric>(name: string, type: abstract new (...args: never[]) => T): T | undefined {
    const found = this.registry.getSingleMetric(name);
    if (!found) return undefined;
    if (!(found instanceof type)) throw new Error(`The metric ${name} is already registered with another type.`);
    return found;
  }
}

/** The kernel's metrics: `ctx.get(metricsServiceIdentifier)` in handlers, `@inject` in services. */
export const metricsServiceIdentifier: ServiceIdentifier<TrellisMetrics> = Symbol.for('@trellis/core/Metrics');

/** The first keyword of a SQL statement, as a low-cardinality label. */
export function sqlOperation(sql: string): string {
  const match = /^\s*(?:\/\*.*?\*\/\s*)?(\w+)/s.exec(sql);
  const word = match?.[1]?.toLowerCase();
  switch (word) {
    case 'select':
    case 'insert':
    case 'update':
    case 'delete':
    case 'begin':
    case 'commit':
    case 'rollback':
      return word;
    case 'with':
      return 'select';
    default:
      return 'other';
  }
}
