/** JSON Schemas of the identity responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export const userSchema = {
  type: 'object',
  required: ['id', 'email', 'name', 'avatarUrl', 'status', 'isSiteAdmin', 'isDeveloper', 'isAdministrator', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    email: { type: 'string', format: 'email' },
    name: { type: 'string' },
    avatarUrl: nullable({ type: 'string', format: 'uri' }),
    status: { enum: ['active', 'disabled'] },
    isSiteAdmin: { type: 'boolean' },
    isDeveloper: { type: 'boolean' },
    isAdministrator: { type: 'boolean' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const teamSchema = {
  type: 'object',
  required: ['id', 'name', 'personal', 'role', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    personal: { type: 'boolean', description: 'The one-person team every user gets; it takes no other members.' },
    role: { enum: ['owner', 'admin', 'member'], description: "The caller's role in the team." },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const memberSchema = {
  type: 'object',
  required: ['userId', 'email', 'name', 'role', 'joinedAt'],
  properties: {
    userId: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
    name: { type: 'string' },
    role: { enum: ['owner', 'admin', 'member'] },
    joinedAt: dateTime,
  },
};

export const sessionSchema = {
  type: 'object',
  required: ['token', 'tokenType', 'expiresIn', 'user'],
  properties: {
    token: { type: 'string', description: 'A JWT; send it as `Authorization: Bearer <token>`.' },
    tokenType: { const: 'Bearer' },
    expiresIn: { type: 'integer', description: 'Seconds until the token expires.' },
    user: userSchema,
  },
};

export const meSchema = {
  type: 'object',
  required: ['user', 'teams', 'credential'],
  properties: {
    user: userSchema,
    teams: { type: 'array', items: teamSchema },
    credential: {
      type: 'object',
      required: ['kind'],
      properties: {
        kind: { enum: ['jwt', 'api_key', 'agent_token', 'oauth', 'anonymous'] },
        scopes: { type: 'array', items: { type: 'string' } },
        actorId: { type: 'string', description: 'Set when an administrator acts as this user.' },
      },
    },
  },
};

export const accessKeySchema = {
  type: 'object',
  required: ['id', 'kind', 'name', 'prefix', 'scopes', 'expiresAt', 'lastUsedAt', 'revokedAt', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    kind: { enum: ['api_key', 'agent_token'] },
    name: { type: 'string' },
    prefix: { type: 'string', description: 'The first characters of the token, to recognise it.' },
    scopes: nullable({ type: 'array', items: { type: 'string' } }),
    expiresAt: nullable(dateTime),
    lastUsedAt: nullable(dateTime),
    revokedAt: nullable(dateTime),
    createdAt: dateTime,
  },
};

export const issuedAccessKeySchema = {
  type: 'object',
  required: ['token', 'credential'],
  properties: {
    token: { type: 'string', description: 'The secret, shown this once. Only its SHA-256 digest is stored.' },
    credential: accessKeySchema,
  },
};

/** A page of a list: `{ items, total, page, size }`, as every list answers. */
export const listOf = (items: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: {
    items: { type: 'array', items },
    total: { type: 'integer', minimum: 0, description: 'Items in the whole list.' },
    page: { type: 'integer', minimum: 1 },
    size: { type: 'integer', minimum: 1 },
  },
});
