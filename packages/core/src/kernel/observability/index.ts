export { TrellisMetrics, metricsServiceIdentifier, durationBuckets, queryBuckets, sqlOperation, type DatabasePoolState, type MetricOptions, type HistogramOptions } from './metrics.js';
export { RequestObserver, RequestObservation, unmatchedRoute } from './request-observer.js';
export { ObservingOrmLogger } from './orm-logger.js';
export { countingPubSub } from './counting-pubsub.js';
export { checkMetricsToken, metricsReply, metricsRoutes } from './metrics-route.js';
export { observeJobRun } from './jobs.js';
export { extractContext, injectTraceHeaders, tracer, tracerName, withSpan } from './tracing.js';
