import type { TrellisModule } from '../kernel/module.js';
import { identityModule } from './identity/identity.module.js';
import { systemModule } from './system/system.module.js';

/**
 * Every built-in area, in load order. A new area is a folder under `modules/` and one line here.
 */
export const coreModules: readonly TrellisModule[] = [systemModule, identityModule];
