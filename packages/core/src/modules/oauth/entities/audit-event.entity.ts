import { EntitySchema } from '@mikro-orm/core';

export type OAuthAuditEventType = 'refresh_token_reuse' | 'authorization_code_reuse';

/**
 * A security event of the authorization server, kept on its own (no foreign keys), so it outlives
 * the app, user or tokens it names. Never holds a token or code, only ids.
 */
export class OAuthAuditEvent {
  id!: string;
  type!: OAuthAuditEventType;
  clientId!: string;
  userId!: string | null;
  tokenFamilyId!: string | null;
  ip!: string;
  userAgent!: string;
  createdAt!: Date;
}

export const OAuthAuditEventSchema = new EntitySchema<OAuthAuditEvent>({
  class: OAuthAuditEvent,
  tableName: 'oauth_audit_events',
  properties: {
    id: { type: 'uuid', primary: true },
    type: { type: 'string', length: 64 },
    clientId: { type: 'string', length: 64, index: true },
    userId: { type: 'uuid', nullable: true },
    tokenFamilyId: { type: 'uuid', nullable: true },
    ip: { type: 'string', length: 64 },
    userAgent: { type: 'string', length: 512 },
    createdAt: { type: 'datetime', onCreate: () => new Date(), index: true },
  },
});
