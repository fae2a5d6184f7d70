import type { CredentialKind } from '../../kernel/auth/principal.js';
import { IdParams } from '../../kernel/http/dto/id-params.js';
import { pageOf, paging } from '../../kernel/http/dto/paging.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { jsonObject, pageSchema } from '../../kernel/http/response-schema.js';
import { auditEntrySchema, AuditService, toAuditEntryView } from '../audit/index.js';
import { DevNamedUpdateBody, type HardwareStatus, pointInto, schemaDocument, hardwareSchema, pointerResultSchema, schemaDocumentSchema, type JsonSchema, toHardwareView } from '../developer/index.js';
import { AdminPointerQuery, AdminTypedListQuery, AdminTypeQuery, type AdminResourceType } from './dto/generic.dto.js';
import { AdminHardwareListQuery, HardwareResetBody } from './dto/hardware.dto.js';
import { AdminUserUpdateBody, UserFilterQuery, UserListQuery } from './dto/user.dto.js';
import { adminUserSchema, becomeSchema, countSchema, hardwareResetSchema } from './schemas.js';
import { AdminHardwareService } from './services/admin-hardware.service.js';
import { AdminUserService, type Acting } from './services/admin-user.service.js';
import { toAdminUserView } from './views.js';
import type { Paging } from '../../kernel/http/dto/paging.js';

const tags = ['Administrator'];
/** Administrator endpoints take a user JWT or API key of a user with the administrator permission. */
const auth: readonly CredentialKind[] = ['jwt', 'api_key'];
const guarded = { tags, auth, permission: 'administrator' as const };

const acting = (ctx: RequestContext): Acting => ({ principal: ctx.requirePrincipal(), ip: ctx.ip, userAgent: ctx.userAgent });

const userRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/user/list',
    summary: 'List users',
    ...guarded,
    query: UserListQuery,
    response: { schema: pageSchema(adminUserSchema) },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(AdminUserService).list(ctx.em, ctx.query, p);
      return pageOf(items.map(toAdminUserView), total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/user/count',
    summary: 'Count users',
    ...guarded,
    query: UserFilterQuery,
    response: { schema: countSchema },
    async handler(ctx) {
      return { count: await ctx.get(AdminUserService).count(ctx.em, ctx.query) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/user/:id',
    summary: 'Get a user',
    ...guarded,
    params: IdParams,
    response: { schema: adminUserSchema },
    errors: { 404: 'No such user (user_not_found)' },
    async handler(ctx) {
      return toAdminUserView(await ctx.get(AdminUserService).get(ctx.em, ctx.params.id));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/admin/user/:id',
    summary: 'Update a user',
    refuseImpersonation: true,
    description:
      'All fields optional. `status: "disabled"` makes every credential of the user fail from the next request on. `isDeveloper`, `isAdministrator` and `isSiteAdmin` (site administrators only) grant or withdraw permissions, effective at once. Audited.',
    ...guarded,
    params: IdParams,
    body: AdminUserUpdateBody,
    response: { schema: adminUserSchema },
    errors: {
      403: 'Missing permission, disabling yourself (cannot_disable_self), changing your own permissions (cannot_change_own_permissions), or changing a site administrator or isSiteAdmin without being one (site_admin_protected)',
      404: 'No such user (user_not_found)',
      409: 'The email belongs to another account (email_taken)',
    },
    async handler(ctx) {
      return toAdminUserView(await ctx.get(AdminUserService).update(ctx.em, ctx.params.id, ctx.body, acting(ctx)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/user/:id/become',
    summary: 'Act as a user',
    noStore: true,
    description:
      'Returns a short-lived JWT (`admin.becomeTtlSeconds`, default 15 minutes) for the user that records the administrator as its actor (RFC 8693 `act` claim; `GET /auth/me` shows it as `credential.actorId`). Written to the audit trail. ' +
      'The token is refused as soon as the administrator is disabled or loses the administrator permission. While impersonating, minting credentials (API keys, agent tokens, device tokens), approving OAuth grants, ' +
      'changing the password, team membership or user permissions answer 403 `impersonation_forbidden`; audit entries name the administrator. Administrators and site administrators cannot be become.',
    ...guarded,
    params: IdParams,
    response: { schema: becomeSchema },
    errors: {
      400: 'Becoming yourself (cannot_become_self)',
      403: 'Missing permission, already acting as someone (nested_become), or an administrator or site administrator target (cannot_become_administrator)',
      404: 'No such user (user_not_found)',
      409: 'The user is disabled (user_disabled)',
    },
    async handler(ctx) {
      const { token, expiresIn, user, actorId } = await ctx.get(AdminUserService).become(ctx.em, ctx.params.id, acting(ctx));
      return { token, tokenType: 'Bearer' as const, expiresIn, user: toAdminUserView(user), actorId };
    },
  }),
];

const hardwareRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/hardware/list',
    summary: 'List every hardware device',
    ...guarded,
    query: AdminHardwareListQuery,
    response: { schema: pageSchema(hardwareSchema) },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(AdminHardwareService).list(ctx.em, { status: ctx.query.status as HardwareStatus | undefined }, p);
      return pageOf(items.map(toHardwareView), total, p);
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/admin/hardware/:id',
    summary: 'Update any hardware device',
    ...guarded,
    params: IdParams,
    body: DevNamedUpdateBody,
    response: { schema: hardwareSchema },
    errors: { 404: 'No such device (hardware_not_found)' },
    async handler(ctx) {
      return toHardwareView(await ctx.get(AdminHardwareService).update(ctx.em, ctx.params.id, ctx.body, acting(ctx)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/hardware/:id/sync_sim',
    summary: 'Synchronise the SIM information of a device',
    description:
      'Without a carrier integration, this adopts the SIM information the device last reported (a `status` message of type `sim` on its channel, or a `sim` log entry) as `sim.synced`, stamped `sim.syncedAt`. Audited.',
    ...guarded,
    params: IdParams,
    response: { schema: hardwareSchema },
    errors: { 404: 'No such device (hardware_not_found)', 409: 'The device reported no SIM information yet (sim_not_reported)' },
    async handler(ctx) {
      return toHardwareView(await ctx.get(AdminHardwareService).syncSim(ctx.em, ctx.params.id, acting(ctx)));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/hardware/:id/reset',
    summary: 'Reset a device',
    description:
      'Pushes `control` `{ command: "reset", target: "device", params: { mode } }` to the device\'s channel (`/v3/wss/{id}`), sets its status to `resetting` until it reports again, and logs and audits the reset. The body may be empty.',
    ...guarded,
    params: IdParams,
    body: HardwareResetBody,
    response: { schema: hardwareResetSchema },
    errors: { 404: 'No such device (hardware_not_found)' },
    async handler(ctx) {
      const { hardware, control } = await ctx.get(AdminHardwareService).reset(ctx.em, ctx.params.id, ctx.body.mode ?? 'soft', acting(ctx));
      return { hardware: toHardwareView(hardware), control };
    },
  }),
];

const adminSchemas: Readonly<Record<AdminResourceType, JsonSchema>> = { user: adminUserSchema, hardware: hardwareSchema, audit: auditEntrySchema };

async function listType(ctx: RequestContext, type: AdminResourceType, p: Paging) {
  switch (type) {
    case 'user': {
      const { items, total } = await ctx.get(AdminUserService).list(ctx.em, {}, p);
      return pageOf(items.map(toAdminUserView), total, p);
    }
    case 'hardware': {
      const { items, total } = await ctx.get(AdminHardwareService).list(ctx.em, {}, p);
      return pageOf(items.map(toHardwareView), total, p);
    }
    case 'audit': {
      const { items, total } = await ctx.get(AuditService).list(ctx.em, {}, p);
      return pageOf(items.map(toAuditEntryView), total, p);
    }
  }
}

const genericRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/schema',
    summary: 'The JSON Schema of an administrator resource type',
    ...guarded,
    query: AdminTypeQuery,
    response: { schema: schemaDocumentSchema },
    handler: (ctx) => schemaDocument('admin', ctx.query.type, adminSchemas[ctx.query.type]),
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/pointer',
    summary: 'One part of a type\'s JSON Schema, named by an RFC 6901 JSON Pointer',
    ...guarded,
    query: AdminPointerQuery,
    response: { schema: pointerResultSchema },
    errors: { 400: 'The pointer is malformed (invalid_pointer)', 404: 'The pointer names nothing in the schema (pointer_not_found)' },
    handler(ctx) {
      const { type, pointer } = ctx.query;
      return { type, pointer, value: pointInto(schemaDocument('admin', type, adminSchemas[type]), pointer) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/admin/list',
    summary: 'List resources of a type',
    description: 'type is user, hardware or audit (the audit trail, newest first).',
    ...guarded,
    query: AdminTypedListQuery,
    response: { schema: pageSchema(jsonObject()) },
    handler: (ctx) => listType(ctx, ctx.query.type, paging(ctx.query)),
  }),
];

export const adminRoutes: RouteDefinition[] = [...userRoutes, ...hardwareRoutes, ...genericRoutes];
