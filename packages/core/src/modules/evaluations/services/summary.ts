import type { EntityManager } from '@mikro-orm/core';
import { EvaluationResult, type EvaluationSummary } from '../entities/evaluation.entity.js';

/** Nearest-rank percentile of sorted numbers. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The summary of result rows: counts, the mean case score, credits, and run latency percentiles. */
export function summaryOf(rows: ReadonlyArray<Pick<EvaluationResult, 'status' | 'passed' | 'score' | 'credits' | 'latencyMs'>>): EvaluationSummary {
  const completed = rows.filter((r) => r.status === 'completed');
  const scored = completed.map((r) => r.score).filter((s): s is number => typeof s === 'number');
  const latencies = rows
    .filter((r) => (r.status === 'completed' || r.status === 'errored') && typeof r.latencyMs === 'number')
    .map((r) => r.latencyMs!)
    .sort((a, b) => a - b);
  return {
    cases: rows.length,
    passed: completed.filter((r) => r.passed).length,
    failed: completed.filter((r) => !r.passed).length,
    errored: rows.filter((r) => r.status === 'errored').length,
    meanScore: scored.length ? scored.reduce((a, b) => a + b, 0) / scored.length : null,
    credits: rows.reduce((sum, r) => sum + (r.credits ?? 0), 0),
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
  };
}

export async function summarize(em: EntityManager, evaluationId: string): Promise<EvaluationSummary> {
  const rows = await em.fork().find(EvaluationResult, { evaluation: evaluationId }, { fields: ['status', 'passed', 'score', 'credits', 'latencyMs'] });
  return summaryOf(rows);
}
