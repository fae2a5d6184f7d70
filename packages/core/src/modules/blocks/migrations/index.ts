import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261124030158_blocks_init.js';
import { migration as m1 } from './20261128200000_blocks_budgets.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1];
