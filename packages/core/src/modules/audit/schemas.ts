/** The audit trail's response, declared once: its JSON Schema (OpenAPI, `GET /admin/schema?type=audit`) and type. */
import { dateTime, jsonObject, nullable, Type, uuid, type Static } from '../../kernel/http/response-schema.js';

export const auditEntrySchema = Type.Object(
  {
    id: uuid(),
    actorId: nullable(uuid(), { description: 'Who acted.' }),
    action: Type.String({ description: 'admin.user.update, admin.user.become, admin.hardware.update, admin.hardware.sync_sim, admin.hardware.reset, ...' }),
    targetType: nullable(Type.String()),
    targetId: nullable(Type.String()),
    data: nullable(jsonObject()),
    ip: nullable(Type.String()),
    createdAt: dateTime(),
  },
  { title: 'audit', description: 'One audited action.', additionalProperties: false },
);
export type AuditEntryView = Static<typeof auditEntrySchema>;
