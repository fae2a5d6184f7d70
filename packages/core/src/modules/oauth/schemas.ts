/** JSON Schemas of the OAuth responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const strings = { type: 'array', items: { type: 'string' } } as const;

export const tokenResponseSchema = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'refresh_token', 'scope'],
  properties: {
    access_token: { type: 'string', description: 'Opaque, prefixed `toa_`.' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer', description: 'Seconds (default 3600).' },
    refresh_token: { type: 'string', description: 'Opaque, prefixed `tor_`; single use: each refresh returns a new one.' },
    scope: { type: 'string', description: 'Space-separated.' },
  },
};

export const userInfoSchema = {
  type: 'object',
  required: ['sub', 'email', 'name', 'avatar_url', 'scope', 'is_site_admin', 'is_real_team_admin'],
  properties: {
    sub: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
    name: { type: 'string' },
    avatar_url: nullable({ type: 'string' }),
    scope: { type: 'string' },
    is_site_admin: { type: 'boolean' },
    is_real_team_admin: { type: 'boolean', description: 'Owner or admin of at least one team with 2 or more members (personal teams do not count).' },
  },
};

export const publicAppSchema = {
  type: 'object',
  required: ['name', 'description', 'logo_url', 'homepage_url', 'redirect_uris', 'scopes', 'scope_descriptions'],
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    logo_url: nullable({ type: 'string', format: 'uri' }),
    homepage_url: nullable({ type: 'string', format: 'uri' }),
    redirect_uris: strings,
    scopes: strings,
    scope_descriptions: {
      type: 'array',
      items: { type: 'object', required: ['scope', 'description'], properties: { scope: { type: 'string' }, description: { type: 'string' } } },
    },
  },
};

export const adminAppSchema = {
  type: 'object',
  required: ['id', 'client_id', 'name', 'description', 'redirect_uris', 'scopes', 'homepage_url', 'logo_url', 'status', 'disabled_at', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    client_id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    redirect_uris: strings,
    scopes: strings,
    homepage_url: nullable({ type: 'string', format: 'uri' }),
    logo_url: nullable({ type: 'string', format: 'uri' }),
    status: { enum: ['active', 'disabled'] },
    disabled_at: nullable(dateTime),
    created_at: dateTime,
    updated_at: dateTime,
  },
};

export const adminAppListSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: adminAppSchema }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
};

export const redirectToSchema = {
  type: 'object',
  required: ['redirectTo'],
  properties: { redirectTo: { type: 'string', description: 'The redirect URI with code, state and iss; navigate to it.' } },
};

export const emptyObjectSchema = { type: 'object', additionalProperties: false };

export const metadataSchema = { type: 'object', description: 'RFC 8414 authorization server metadata', required: ['issuer'] };
