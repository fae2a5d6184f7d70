import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { AuditEntrySchema } from './entities/audit-entry.entity.js';
import { migrations } from './migrations/index.js';
import { AuditService } from './services/audit.service.js';

/**
 * The audit trail: a generic record of sensitive actions (an administrator acting as a user,
 * resetting a device, ...). Any module may write to it through `AuditService`.
 */
export const auditModule = defineModule({
  name: 'audit',
  entities: [AuditEntrySchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(AuditService).toSelf();
    }),
});
