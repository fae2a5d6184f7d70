import { Reply } from '../../../kernel/http/reply.js';
import { pageOf, paging } from '../../../kernel/http/dto/paging.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { CreateOAuthAppBody, ListOAuthAppsQuery, OAuthAppIdParams, UpdateOAuthAppBody } from '../dto/admin.dto.js';
import { adminAppListSchema, adminAppSchema } from '../schemas.js';
import { OAuthAppService } from '../services/oauth-app.service.js';
import { toAdminView } from '../views.js';

const tags = ['OAuth administration'];
const admin = { auth: ['jwt'], permission: 'site:admin' } as const;
const notFound = { 404: 'No such app, or it is deleted (oauth_app_not_found)' };

export const adminRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/oauth-apps',
    summary: 'List OAuth apps (deleted ones are left out)',
    tags,
    ...admin,
    query: ListOAuthAppsQuery,
    response: { schema: adminAppListSchema },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(OAuthAppService).list(ctx.em, p, ctx.query.search);
      return pageOf(items.map(toAdminView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/oauth-apps',
    summary: 'Register an OAuth app',
    description: 'name, redirect_uris and scopes are required. client_id is generated unless given.',
    tags,
    ...admin,
    body: CreateOAuthAppBody,
    response: { status: 201, schema: adminAppSchema },
    errors: {
      409: 'The client_id is taken (client_id_taken)',
      422: 'Invalid field (validation_failed), redirect URI (invalid_redirect_uri), scope (unknown_scope, scope_not_allowed)',
    },
    async handler(ctx) {
      const app = await ctx.get(OAuthAppService).create(ctx.em, ctx.body);
      return Reply.json(toAdminView(app), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/oauth-apps/:id',
    summary: 'Read one OAuth app',
    tags,
    ...admin,
    params: OAuthAppIdParams,
    response: { schema: adminAppSchema },
    errors: notFound,
    async handler(ctx) {
      return toAdminView(await ctx.get(OAuthAppService).get(ctx.em, ctx.params.id));
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/admin/oauth-apps/:id',
    summary: 'Update an OAuth app (partial)',
    description: 'Changing scopes or redirect_uris revokes every token of the app.',
    tags,
    ...admin,
    params: OAuthAppIdParams,
    body: UpdateOAuthAppBody,
    response: { schema: adminAppSchema },
    errors: { ...notFound, 422: 'Invalid field (validation_failed, invalid_redirect_uri, unknown_scope, scope_not_allowed)' },
    async handler(ctx) {
      return toAdminView(await ctx.get(OAuthAppService).update(ctx.em, ctx.params.id, ctx.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/admin/oauth-apps/:id',
    summary: 'Delete an OAuth app (soft delete; revokes every token)',
    tags,
    ...admin,
    params: OAuthAppIdParams,
    response: { status: 204 },
    errors: notFound,
    async handler(ctx) {
      await ctx.get(OAuthAppService).delete(ctx.em, ctx.params.id);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/oauth-apps/:id/disable',
    summary: 'Disable an OAuth app (revokes every token)',
    tags,
    ...admin,
    params: OAuthAppIdParams,
    response: { schema: adminAppSchema },
    errors: notFound,
    async handler(ctx) {
      return toAdminView(await ctx.get(OAuthAppService).disable(ctx.em, ctx.params.id));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/oauth-apps/:id/enable',
    summary: 'Enable an OAuth app again',
    tags,
    ...admin,
    params: OAuthAppIdParams,
    response: { schema: adminAppSchema },
    errors: notFound,
    async handler(ctx) {
      return toAdminView(await ctx.get(OAuthAppService).enable(ctx.em, ctx.params.id));
    },
  }),
];
