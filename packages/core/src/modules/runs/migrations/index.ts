import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261124033338_runs_init.js';
import { migration as m1 } from './20261128090209_runs_idempotency.js';
import { migration as m2 } from './20261128160000_runs_subworkflows.js';
import { migration as m3 } from './20261128200000_runs_budgets.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1, m2, m3];
