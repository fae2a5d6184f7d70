import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261128160143_evaluations_init.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0];
