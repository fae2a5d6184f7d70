import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261122190812_identity_init.js';
import { migration as m1 } from './20261124030114_identity_password_changed_at.js';
import { migration as m2 } from './20261124033717_identity_team_deleted_at.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1, m2];
