import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261124030213_tools_vdb.js';
import { migration as m1 } from './20261124031012_tools_anonymous.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1];
