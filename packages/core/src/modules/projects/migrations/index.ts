import type { MigrationDefinition } from '../../../ports/database.js';

export const migrations: readonly MigrationDefinition[] = [];
