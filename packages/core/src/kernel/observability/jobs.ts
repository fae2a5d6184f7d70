import { SpanKind } from '@opentelemetry/api';
import type { TrellisMetrics } from './metrics.js';
import { withSpan } from './tracing.js';

/** Runs one job tick inside a span, counting the run and its outcome; rethrows a failure. */
export async function observeJobRun(metrics: TrellisMetrics | undefined, job: string, work: () => Promise<void>): Promise<void> {
  const started = process.hrtime.bigint();
  let outcome = 'failed';
  try {
    await withSpan(`job ${job}`, { 'trellis.job': job }, work, SpanKind.INTERNAL);
    outcome = 'ok';
  } finally {
    metrics?.jobRuns.inc({ job, outcome });
    metrics?.jobDuration.observe({ job }, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
