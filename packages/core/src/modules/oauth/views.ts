import type { OAuthApp } from './entities/oauth-app.entity.js';
import type { OAuthAppAdminView, OAuthAppPublicView } from './schemas.js';

export const toAdminView = (app: OAuthApp): OAuthAppAdminView => ({
  id: app.id,
  client_id: app.clientId,
  name: app.name,
  description: app.description,
  redirect_uris: [...app.redirectUris],
  scopes: [...app.scopes],
  homepage_url: app.homepageUrl,
  logo_url: app.logoUrl,
  status: app.disabledAt ? 'disabled' : 'active',
  disabled_at: app.disabledAt?.toISOString() ?? null,
  created_at: app.createdAt.toISOString(),
  updated_at: app.updatedAt.toISOString(),
});

export const toPublicView = (app: OAuthApp, catalogue: Readonly<Record<string, string>>): OAuthAppPublicView => ({
  name: app.name,
  description: app.description,
  logo_url: app.logoUrl,
  homepage_url: app.homepageUrl,
  redirect_uris: [...app.redirectUris],
  scopes: [...app.scopes],
  scope_descriptions: app.scopes.map((scope) => ({ scope, description: catalogue[scope] ?? scope })),
});
