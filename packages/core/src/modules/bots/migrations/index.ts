import type { MigrationDefinition } from '../../../ports/database.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [];
