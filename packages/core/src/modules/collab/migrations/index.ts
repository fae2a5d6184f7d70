import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261122194048_collab_init.js';
import { migration as m1 } from './20261128090210_collab_leases.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1];
