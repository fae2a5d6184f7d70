import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261122192333_ai_init.js';
import { migration as m1 } from './20261128160518_ai_model_calls.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1];
