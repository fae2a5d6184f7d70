import type { MigrationDefinition } from '../../../ports/database.js';

/** A deployment's budget in credits (docs/runs.md, "Budgets"): its API runs together spend at most this. */
export const migration: MigrationDefinition = {
  name: '20261128200000_blocks_budgets',
  up: {
    sqlite: ["alter table `blocks` add column `budget_credits` integer null"],
    postgresql: ["alter table \"blocks\" add column \"budget_credits\" int null"],
  },
  down: {
    sqlite: ["alter table `blocks` drop column `budget_credits`"],
    postgresql: ["alter table \"blocks\" drop column \"budget_credits\""],
  },
};
