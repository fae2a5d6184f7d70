import type { OAuthApp } from './entities/oauth-app.entity.js';

/** An app as administrators see it (snake_case, like the spec's OAuth fields). */
export interface OAuthAppAdminView {
  id: string;
  client_id: string;
  name: string;
  description: string;
  redirect_uris: string[];
  scopes: string[];
  homepage_url: string | null;
  logo_url: string | null;
  status: 'active' | 'disabled';
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

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

/** The spec's "OAuth app (public view)", shown on the consent page. */
export interface OAuthAppPublicView {
  name: string;
  description: string;
  logo_url: string | null;
  homepage_url: string | null;
  redirect_uris: string[];
  scopes: string[];
  scope_descriptions: Array<{ scope: string; description: string }>;
}

export const toPublicView = (app: OAuthApp, catalogue: Readonly<Record<string, string>>): OAuthAppPublicView => ({
  name: app.name,
  description: app.description,
  logo_url: app.logoUrl,
  homepage_url: app.homepageUrl,
  redirect_uris: [...app.redirectUris],
  scopes: [...app.scopes],
  scope_descriptions: app.scopes.map((scope) => ({ scope, description: catalogue[scope] ?? scope })),
});

/** The spec's "User info (OAuth)". */
export interface UserInfo {
  sub: string;
  email: string;
  name: string;
  avatar_url: string | null;
  scope: string;
  is_site_admin: boolean;
  is_real_team_admin: boolean;
}
