/** The OAuth responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';

/** RFC 6749 §5.1. */
export const tokenResponseSchema = Type.Object({
  access_token: Type.String({ description: 'Opaque, prefixed `toa_`.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds (default 3600).' }),
  refresh_token: Type.String({ description: 'Opaque, prefixed `tor_`; single use: each refresh returns a new one.' }),
  scope: Type.String({ description: 'Space-separated.' }),
});
export type TokenResponse = Static<typeof tokenResponseSchema>;

/** The spec's "User info (OAuth)". */
export const userInfoSchema = Type.Object({
  sub: uuid(),
  email: Type.String(),
  name: Type.String(),
  avatar_url: nullable(Type.String()),
  scope: Type.String(),
  is_site_admin: Type.Boolean(),
  is_real_team_admin: Type.Boolean({ description: 'Owner or admin of at least one team with 2 or more members (personal teams do not count).' }),
});
export type UserInfo = Static<typeof userInfoSchema>;

/** The spec's "OAuth app (public view)", shown on the consent page. */
export const publicAppSchema = Type.Object({
  name: Type.String(),
  description: Type.String(),
  logo_url: nullable(Type.String({ format: 'uri' })),
  homepage_url: nullable(Type.String({ format: 'uri' })),
  redirect_uris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  scope_descriptions: Type.Array(Type.Object({ scope: Type.String(), description: Type.String() })),
});
export type OAuthAppPublicView = Static<typeof publicAppSchema>;

/** An app as administrators see it (snake_case, like the spec's OAuth fields). */
export const adminAppSchema = Type.Object({
  id: uuid(),
  client_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  homepage_url: nullable(Type.String({ format: 'uri' })),
  logo_url: nullable(Type.String({ format: 'uri' })),
  status: stringEnum(['active', 'disabled']),
  disabled_at: nullable(dateTime()),
  created_at: dateTime(),
  updated_at: dateTime(),
});
export type OAuthAppAdminView = Static<typeof adminAppSchema>;

export const adminAppListSchema = pageSchema(adminAppSchema);

export const redirectToSchema = Type.Object({
  redirectTo: Type.String({ description: 'The redirect URI with code, state and iss; navigate to it.' }),
});

export const emptyObjectSchema = Type.Object({}, { additionalProperties: false });

/** RFC 8414 §2 (and RFC 9207 §3): `issuer` always; the other members as the server supports them. */
export const metadataSchema = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    registration_endpoint: Type.Optional(Type.String()),
    userinfo_endpoint: Type.String(),
    scopes_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    response_modes_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    prompt_values_supported: Type.Array(Type.String()),
    display_values_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    service_documentation: Type.String(),
  },
  { description: 'RFC 8414 authorization server metadata' },
);

/** RFC 7591 §3.2.1. */
export const registrationSchema = Type.Object(
  {
    client_id: Type.String(),
    client_id_issued_at: Type.Integer(),
    client_name: Type.Optional(Type.String()),
    redirect_uris: Type.Array(Type.String()),
    token_endpoint_auth_method: Type.Literal('none'),
    grant_types: Type.Array(Type.String()),
    response_types: Type.Array(Type.String()),
    scope: Type.String(),
  },
  { description: 'RFC 7591 §3.2.1 client information response' },
);
export type RegistrationView = Static<typeof registrationSchema>;
