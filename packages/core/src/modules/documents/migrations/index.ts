import type { MigrationDefinition } from '../../../ports/database.js';
import { migration as m0 } from './20261122194042_documents_init.js';
import { migration as m1 } from './20261124060451_documents_version_deltas.js';
import { migration as m2 } from './20261124095500_documents_content_json.js';

/** This module's migrations, oldest first. */
export const migrations: readonly MigrationDefinition[] = [m0, m1, m2];
