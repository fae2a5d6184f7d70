/** The identity responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, nullable, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';

export const userSchema = Type.Object({
  id: uuid(),
  email: Type.String({ format: 'email' }),
  name: Type.String(),
  avatarUrl: nullable(Type.String({ format: 'uri' })),
  status: stringEnum(['active', 'disabled']),
  isSiteAdmin: Type.Boolean(),
  isDeveloper: Type.Boolean(),
  isAdministrator: Type.Boolean(),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type UserView = Static<typeof userSchema>;

const teamRole = ['owner', 'admin', 'member'] as const;

export const teamSchema = Type.Object({
  id: uuid(),
  name: Type.String(),
  personal: Type.Boolean({ description: 'The one-person team every user gets; it takes no other members.' }),
  role: stringEnum(teamRole, { description: "The caller's role in the team." }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type TeamView = Static<typeof teamSchema>;

export const memberSchema = Type.Object({
  userId: uuid(),
  email: Type.String(),
  name: Type.String(),
  role: stringEnum(teamRole),
  joinedAt: dateTime(),
});
export type MemberView = Static<typeof memberSchema>;

export const sessionSchema = Type.Object({
  token: Type.String({ description: 'A JWT; send it as `Authorization: Bearer <token>`.' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires.' }),
  user: userSchema,
});
export type SessionView = Static<typeof sessionSchema>;

/** The credential kinds `GET /auth/me` accepts (its `auth`), which its answer names. */
export const meCredentialKinds = ['jwt', 'api_key', 'agent_token', 'oauth', 'anonymous'] as const;

export const meSchema = Type.Object({
  user: userSchema,
  teams: Type.Array(teamSchema),
  credential: Type.Object({
    kind: stringEnum(meCredentialKinds),
    scopes: Type.Optional(Type.Array(Type.String())),
    actorId: Type.Optional(Type.String({ description: 'Set when an administrator acts as this user.' })),
  }),
});

export const accessKeySchema = Type.Object({
  id: uuid(),
  kind: stringEnum(['api_key', 'agent_token']),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the token, to recognise it.' }),
  scopes: nullable(Type.Array(Type.String())),
  expiresAt: nullable(dateTime()),
  lastUsedAt: nullable(dateTime()),
  revokedAt: nullable(dateTime()),
  createdAt: dateTime(),
});
export type AccessKeyView = Static<typeof accessKeySchema>;

export const issuedAccessKeySchema = Type.Object({
  token: Type.String({ description: 'The secret, shown this once. Only its SHA-256 digest is stored.' }),
  credential: accessKeySchema,
});
