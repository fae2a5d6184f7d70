import type { JsonSchema } from '../developer/schemas.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });

/** A user as the administrator API shows it. */
export const adminUserSchema: JsonSchema = {
  title: 'user',
  description: 'A user account as administrators see it.',
  type: 'object',
  required: ['id', 'username', 'email', 'phone', 'status', 'profile', 'avatarUrl', 'roles', 'isSiteAdmin', 'isDeveloper', 'isAdministrator', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid', readOnly: true },
    username: { type: 'string', minLength: 1, maxLength: 200, description: 'The display name.' },
    email: { type: 'string', format: 'email' },
    phone: nullable({ type: 'string' }),
    status: { enum: ['active', 'disabled'] },
    profile: nullable({ type: 'object' }),
    avatarUrl: { ...nullable({ type: 'string', format: 'uri' }), readOnly: true },
    roles: {
      type: 'array',
      readOnly: true,
      items: { enum: ['site_admin', 'administrator', 'developer', 'user'] },
      description: 'Every role filter that matches this user.',
    },
    isSiteAdmin: { type: 'boolean', readOnly: true },
    isDeveloper: { type: 'boolean', readOnly: true },
    isAdministrator: { type: 'boolean', readOnly: true },
    createdAt: { ...dateTime, readOnly: true },
    updatedAt: { ...dateTime, readOnly: true },
  },
  additionalProperties: false,
};

export const auditEntrySchema: JsonSchema = {
  title: 'audit',
  description: 'One audited action.',
  type: 'object',
  required: ['id', 'actorId', 'action', 'targetType', 'targetId', 'data', 'ip', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    actorId: { ...nullable({ type: 'string', format: 'uuid' }), description: 'Who acted.' },
    action: { type: 'string', description: 'admin.user.update, admin.user.become, admin.hardware.update, admin.hardware.sync_sim, admin.hardware.reset, ...' },
    targetType: nullable({ type: 'string' }),
    targetId: nullable({ type: 'string' }),
    data: nullable({ type: 'object' }),
    ip: nullable({ type: 'string' }),
    createdAt: dateTime,
  },
  additionalProperties: false,
};

export const becomeSchema: JsonSchema = {
  type: 'object',
  required: ['token', 'tokenType', 'expiresIn', 'user', 'actorId'],
  properties: {
    token: { type: 'string', description: 'A JWT for the target user carrying `act: { sub: <administrator id> }` (RFC 8693).' },
    tokenType: { const: 'Bearer' },
    expiresIn: { type: 'integer', description: 'Seconds until the token expires (admin.becomeTtlSeconds).' },
    user: adminUserSchema,
    actorId: { type: 'string', format: 'uuid', description: 'The administrator acting as the user.' },
  },
};

export const countSchema: JsonSchema = { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } };
