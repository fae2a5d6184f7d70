export { auditModule } from './audit.module.js';
export { AuditEntry, AuditEntrySchema } from './entities/audit-entry.entity.js';
export { AuditService, toAuditEntryView, type AuditFilter, type AuditRecordInput } from './services/audit.service.js';
export { auditEntrySchema, type AuditEntryView } from './schemas.js';
