export { auditModule } from './audit.module.js';
export { AuditEntry, AuditEntrySchema } from './entities/audit-entry.entity.js';
export { AuditService, toAuditEntryView, type AuditEntryView, type AuditFilter, type AuditRecordInput } from './services/audit.service.js';
