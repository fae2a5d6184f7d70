/** The administrator responses, declared once: their JSON Schema (OpenAPI, `GET /admin/schema`) and types. */
import { dateTime, jsonObject, nullable, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import { hardwareSchema } from '../developer/index.js';
import { userRoles } from './dto/user.dto.js';

/** A user as the administrator API shows it. */
export const adminUserSchema = Type.Object(
  {
    id: uuid({ readOnly: true }),
    username: Type.String({ minLength: 1, maxLength: 200, description: 'The display name.' }),
    email: Type.String({ format: 'email' }),
    phone: nullable(Type.String()),
    status: stringEnum(['active', 'disabled']),
    profile: nullable(jsonObject()),
    avatarUrl: nullable(Type.String({ format: 'uri' }), { readOnly: true }),
    roles: Type.Array(stringEnum(userRoles), { readOnly: true, description: 'Every role filter that matches this user.' }),
    isSiteAdmin: Type.Boolean({ readOnly: true }),
    isDeveloper: Type.Boolean({ readOnly: true }),
    isAdministrator: Type.Boolean({ readOnly: true }),
    createdAt: dateTime({ readOnly: true }),
    updatedAt: dateTime({ readOnly: true }),
  },
  { title: 'user', description: 'A user account as administrators see it.', additionalProperties: false },
);
export type AdminUserView = Static<typeof adminUserSchema>;

export const becomeSchema = Type.Object({
  token: Type.String({ description: 'A JWT for the target user carrying `act: { sub: <administrator id> }` (RFC 8693).' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires (admin.becomeTtlSeconds).' }),
  user: adminUserSchema,
  actorId: uuid({ description: 'The administrator acting as the user.' }),
});

export const countSchema = Type.Object({ count: Type.Integer() });

export const hardwareResetSchema = Type.Object({
  hardware: hardwareSchema,
  control: jsonObject({ description: 'The params of the `control` notification sent.' }),
});
