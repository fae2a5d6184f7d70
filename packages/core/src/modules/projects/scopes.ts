/**
 * Scopes a scoped credential (an API key or agent token issued with `scopes`, or an OAuth access
 * token) needs for projects, documents and collaborative editing. A credential without scopes
 * keeps its user's full authority; `auth.fullAccessScopes` (default `mobile:full`) passes too.
 */
export const documentScopes = {
  read: ['documents:read', 'documents:write'],
  write: ['documents:write'],
} as const;
