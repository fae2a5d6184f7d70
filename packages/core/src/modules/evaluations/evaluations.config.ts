import { s, type InferConfig } from '../../kernel/config/schema.js';

export const evaluationsConfigSchema = s.object({
  defaultConcurrency: s.int().range(1, 256).default(4).describe('Runs of one evaluation going on at once when the request gives no `concurrency`.'),
  maxConcurrency: s.int().range(1, 256).default(16).describe('Largest `concurrency` an evaluation may ask for (more answers 422 `concurrency_too_high`). The run queue\'s own limits (`runs.concurrency`, `runs.teamConcurrency`) still apply.'),
  maxCases: s.int().range(1, 100_000).default(1_000).describe('Most cases one dataset holds (more answers 422 `dataset_too_large`).'),
  heartbeatSeconds: s.int().range(1, 3_600).default(10).describe('How often the process driving an evaluation records that it is alive.'),
  staleAfterSeconds: s.int().range(5, 86_400).default(60).describe('An evaluation running without a heartbeat for this long was left by a process that went away: another process takes it over (its cases whose runs started are attached to, never started twice).'),
});

export type EvaluationsConfig = InferConfig<typeof evaluationsConfigSchema>;
