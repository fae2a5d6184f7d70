import type { MigrationDefinition } from '../../../ports/database.js';

/**
 * Budgets (docs/runs.md, "Budgets"): a run's budget in credits, and the run whose budget bounds
 * it (`budget_root_id`: itself for a run started otherwise, its top run for a sub-workflow's run);
 * a budget's spend is summed over the model calls of the runs that share the root.
 */
export const migration: MigrationDefinition = {
  name: '20261128200000_runs_budgets',
  up: {
    sqlite: [
      "alter table `runs` add column `budget_credits` integer null",
      "alter table `runs` add column `budget_root_id` text null",
      "create index `runs_budget_root_id_index` on `runs` (`budget_root_id`)",
    ],
    postgresql: [
      "alter table \"runs\" add column \"budget_credits\" int null, add column \"budget_root_id\" uuid null",
      "create index \"runs_budget_root_id_index\" on \"runs\" (\"budget_root_id\")",
    ],
  },
  down: {
    sqlite: [
      "drop index if exists `runs_budget_root_id_index`",
      "alter table `runs` drop column `budget_root_id`",
      "alter table `runs` drop column `budget_credits`",
    ],
    postgresql: [
      "drop index if exists \"runs_budget_root_id_index\"",
      "alter table \"runs\" drop column \"budget_credits\", drop column \"budget_root_id\"",
    ],
  },
};
