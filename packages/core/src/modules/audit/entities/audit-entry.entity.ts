import { EntitySchema } from '@mikro-orm/core';

/**
 * One audited action: who did what to which target, and when. Generic on purpose: any module can
 * write entries (`AuditService.record`). Ids are plain columns, not foreign keys, so the trail
 * outlives the users and resources it names.
 */
export class AuditEntry {
  id!: string;
  /** The user who acted (for `become`, the administrator); null for the system. */
  actorId!: string | null;
  /** Dotted name of the action: `admin.user.become`, `admin.hardware.reset`, ... */
  action!: string;
  /** Kind of the target (`user`, `hardware`, ...) and its id. */
  targetType!: string | null;
  targetId!: string | null;
  /** Action-specific facts (changed fields, options); never secrets. */
  data!: Record<string, unknown> | null;
  ip!: string | null;
  userAgent!: string | null;
  createdAt!: Date;
}

export const AuditEntrySchema = new EntitySchema<AuditEntry>({
  class: AuditEntry,
  tableName: 'audit_entries',
  indexes: [{ properties: ['targetType', 'targetId'] }, { properties: ['actorId'] }, { properties: ['createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    actorId: { type: 'uuid', nullable: true },
    action: { type: 'string', length: 100 },
    targetType: { type: 'string', length: 64, nullable: true },
    targetId: { type: 'string', length: 64, nullable: true },
    data: { type: 'json', nullable: true },
    ip: { type: 'string', length: 64, nullable: true },
    userAgent: { type: 'string', length: 512, nullable: true },
    createdAt: { type: 'datetime' },
  },
});
