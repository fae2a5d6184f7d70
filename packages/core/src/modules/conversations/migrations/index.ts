import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261122192326_conversations_init.js';
import { migration as m1 } from './20261124030124_conversations_messages.js';
import { migration as m2 } from './20261128091500_conversations_turn_lease.js';
import { migration as m3 } from './20261128123815_conversations_turn_log.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1, m2, m3];
