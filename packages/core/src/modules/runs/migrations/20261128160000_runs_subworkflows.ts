import type { MigrationDefinition } from '../../../ports/database.js';

/**
 * Sub-workflows (blocks/kinds/subworkflow.ts): a run started by a sub-workflow block records the
 * run and block that started it and its depth below the top run; the parent lists its children
 * by `parent_run_id`.
 */
export const migration: MigrationDefinition = {
  name: '20261128160000_runs_subworkflows',
  up: {
    sqlite: [
      "alter table `runs` add column `parent_run_id` text null",
      "alter table `runs` add column `parent_block_id` text null",
      "alter table `runs` add column `depth` integer not null default 0",
      "create index `runs_parent_run_id_index` on `runs` (`parent_run_id`)",
    ],
    postgresql: [
      "alter table \"runs\" add column \"parent_run_id\" uuid null, add column \"parent_block_id\" varchar(128) null, add column \"depth\" int not null default 0",
      "create index \"runs_parent_run_id_index\" on \"runs\" (\"parent_run_id\")",
    ],
  },
  down: {
    sqlite: [
      "drop index if exists `runs_parent_run_id_index`",
      "alter table `runs` drop column `depth`",
      "alter table `runs` drop column `parent_block_id`",
      "alter table `runs` drop column `parent_run_id`",
    ],
    postgresql: [
      "drop index if exists \"runs_parent_run_id_index\"",
      "alter table \"runs\" drop column \"parent_run_id\", drop column \"parent_block_id\", drop column \"depth\"",
    ],
  },
};
