import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { adminConfigSchema } from './admin.config.js';
import { adminRoutes } from './routes.js';
import { AdminHardwareService } from './services/admin-hardware.service.js';
import { AdminUserService, adminSettingsServiceIdentifier, type AdminSettings } from './services/admin-user.service.js';

/**
 * The administrator API (`/admin`): users (list, count, read, update, become), every hardware
 * device (list, update, SIM sync, reset), and the generic schema, pointer and list operations.
 * Sensitive actions go to the audit trail.
 */
export const adminModule = defineModule({
  name: 'admin',
  dependsOn: ['identity', 'audit', 'developer', 'realtime'],
  config: adminConfigSchema,
  container: ({ section }) =>
    new ContainerModule(({ bind }) => {
      bind(adminSettingsServiceIdentifier).toConstantValue(section as AdminSettings);
      bind(AdminUserService).toSelf();
      bind(AdminHardwareService).toSelf();
    }),
  routes: adminRoutes,
});
