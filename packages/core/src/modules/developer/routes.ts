import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { Reply } from '../../kernel/http/reply.js';
import { IdParams } from '../../kernel/http/dto/id-params.js';
import { PageQuery, pageOf, paging } from '../../kernel/http/dto/paging.js';
import type { CredentialKind } from '../../kernel/auth/principal.js';
import { TrellisError } from '../../kernel/errors.js';
import { HardwareLogBody } from './dto/hardware.dto.js';
import { DevPointerQuery, DevTypedListQuery, DevTypeQuery, HardwareLogQuery } from './dto/query.dto.js';
import { pointInto, schemaDocument } from './generic.js';
import { devResources, devResourceTypes, type DevInput, type DevResourceType } from './resource-types.js';
import { jsonObject, pageSchema } from '../../kernel/http/response-schema.js';
import { hardwareLogSchema, issuedDeviceTokenSchema, pointerResultSchema, schemaDocumentSchema } from './schemas.js';
import { DeveloperResourceService } from './services/developer-resource.service.js';
import { DeviceTokenService, type DeviceKind } from './services/device-token.service.js';
import { HardwareLogService } from './services/hardware-log.service.js';
import { toHardwareLogView } from './views.js';

const tags = ['Developer'];
/** Developer endpoints take a user JWT or API key of a user with the developer permission. */
const auth: readonly CredentialKind[] = ['jwt', 'api_key'];
const permission = 'developer' as const;
const guarded = { tags, auth, permission };

const owner = (ctx: RequestContext) => ctx.requirePrincipal().userId;

async function listOf(ctx: RequestContext<unknown, PageQuery>, type: DevResourceType) {
  const p = paging(ctx.query);
  const { items, total } = await ctx.get(DeveloperResourceService).list(ctx.em, type, owner(ctx), p);
  return pageOf(items.map(devResources[type].view), total, p);
}

/** The five CRUD routes of one resource type. */
function crudRoutes(type: DevResourceType): RouteDefinition[] {
  const d = devResources[type];
  const base = `/dev/${type}`;
  const notFound = { 404: `No such ${d.label} of yours (${d.notFound})` };
  return [
    defineRoute({
      method: 'GET',
      path: `${base}/list`,
      summary: `List your ${d.label}s`,
      ...guarded,
      query: PageQuery,
      response: { schema: pageSchema(d.schema) },
      handler: (ctx) => listOf(ctx, type),
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/:id`,
      summary: `Get one of your ${d.label}s`,
      ...guarded,
      params: IdParams,
      response: { schema: d.schema },
      errors: notFound,
      async handler(ctx) {
        return d.view(await ctx.get(DeveloperResourceService).get(ctx.em, type, owner(ctx), ctx.params.id));
      },
    }),
    defineRoute({
      method: 'POST',
      path: base,
      summary: `Create a ${d.label}`,
      ...guarded,
      body: d.createBody,
      response: { status: 201, schema: d.schema },
      async handler(ctx) {
        const entity = await ctx.get(DeveloperResourceService).create(ctx.em, type, owner(ctx), ctx.body as DevInput);
        return Reply.json(d.view(entity), 201);
      },
    }),
    defineRoute({
      method: 'PUT',
      path: `${base}/:id`,
      summary: `Update one of your ${d.label}s`,
      description: 'Every field is optional; absent fields keep their value. `config`, when sent, replaces the stored object.',
      ...guarded,
      params: IdParams,
      body: d.updateBody,
      response: { schema: d.schema },
      errors: notFound,
      async handler(ctx) {
        const entity = await ctx.get(DeveloperResourceService).update(ctx.em, type, owner(ctx), ctx.params.id, ctx.body as DevInput);
        return d.view(entity);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/:id`,
      summary: `Delete one of your ${d.label}s`,
      description:
        type === 'hardware'
          ? 'Irreversible; deletes the device\'s logs and invalidates its device token.'
          : type === 'bot'
            ? 'Irreversible; deletes the conversations of the bot too.'
            : 'Irreversible.',
      ...guarded,
      params: IdParams,
      response: { status: 204 },
      errors: notFound,
      async handler(ctx) {
        await ctx.get(DeveloperResourceService).remove(ctx.em, type, owner(ctx), ctx.params.id);
      },
    }),
  ];
}

/** Issue and revoke routes of device tokens, for hardware devices and applications. */
function tokenRoutes(type: 'hardware' | 'app', kind: DeviceKind): RouteDefinition[] {
  const d = devResources[type];
  const path = `/dev/${type}/:id/token`;
  return [
    defineRoute({
      method: 'POST',
      path,
      summary: `Issue the device token of a ${d.label}`,
      noStore: true,
      refuseImpersonation: true,
      description: `The ${d.label} connects to \`/v3/wss/{id}\` with this token (\`tdv_...\`) instead of its owner's credentials. Shown once; only its SHA-256 digest is stored. Issuing again replaces the previous token, which is revoked at once.`,
      ...guarded,
      params: IdParams,
      response: { status: 201, schema: issuedDeviceTokenSchema },
      errors: { 404: `No such ${d.label} of yours (${d.notFound})` },
      async handler(ctx) {
        const issued = await ctx.get(DeviceTokenService).issue(ctx.em, kind, owner(ctx), ctx.params.id);
        return Reply.json({ ...issued, issuedAt: issued.issuedAt.toISOString() }, 201);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path,
      summary: `Revoke the device token of a ${d.label}`,
      ...guarded,
      params: IdParams,
      response: { status: 204 },
      errors: { 404: `No such ${d.label} of yours (${d.notFound})` },
      async handler(ctx) {
        await ctx.get(DeviceTokenService).revoke(ctx.em, kind, owner(ctx), ctx.params.id);
      },
    }),
  ];
}

const hardwareLogRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/dev/hardware/:id/logs',
    summary: 'Read the logs of one of your hardware devices',
    description: 'Newest first. `start_time` and `end_time` (ISO 8601 with a time zone, or epoch milliseconds) bound the window, both inclusive.',
    ...guarded,
    params: IdParams,
    query: HardwareLogQuery,
    response: { schema: pageSchema(hardwareLogSchema) },
    errors: { 404: 'No such hardware device of yours (hardware_not_found)', 422: 'Bad paging or time values, or start_time after end_time (validation_failed, invalid_time_range)' },
    async handler(ctx) {
      const logs = ctx.get(HardwareLogService);
      await logs.requireOwned(ctx.em, owner(ctx), ctx.params.id);
      const p = paging(ctx.query);
      const { items, total } = await logs.list(ctx.em, ctx.params.id, { start: ctx.query.start_time, end: ctx.query.end_time }, p);
      return pageOf(items.map(toHardwareLogView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/dev/hardware/:id/logs',
    summary: 'Add a log entry to a hardware device',
    description:
      'Taken from the device\'s owner (JWT or API key) or from the device itself with its device token (`tdv_`), which may write to its own logs only. An entry written with the device token also marks the device as seen. A `sim` entry whose content is a JSON object records the SIM information the device reports (see `POST /admin/hardware/{id}/sync_sim`).',
    ...guarded,
    auth: [...auth, 'device'],
    params: IdParams,
    body: HardwareLogBody,
    response: { status: 201, schema: hardwareLogSchema },
    errors: {
      403: 'Missing permission, or a device token of another device (device_token_mismatch)',
      404: 'No such hardware device of yours (hardware_not_found)',
    },
    async handler(ctx) {
      const logs = ctx.get(HardwareLogService);
      const principal = ctx.requirePrincipal();
      const byDevice = principal.kind === 'device';
      if (byDevice && (principal.device?.kind !== 'hardware' || principal.device.id !== ctx.params.id)) {
        throw new TrellisError('forbidden', 'device_token_mismatch', 'A device token may only write the logs of its own device.');
      }
      await logs.requireOwned(ctx.em, principal.userId, ctx.params.id);
      const log = await logs.append(ctx.em, ctx.params.id, ctx.body.type, ctx.body.content, { seen: byDevice });
      return Reply.json(toHardwareLogView(log), 201);
    },
  }),
];

const genericRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/dev/schema',
    summary: 'The JSON Schema of a developer resource type',
    ...guarded,
    query: DevTypeQuery,
    response: { schema: schemaDocumentSchema },
    handler: (ctx) => schemaDocument('dev', ctx.query.type, devResources[ctx.query.type as DevResourceType].schema),
  }),
  defineRoute({
    method: 'GET',
    path: '/dev/pointer',
    summary: 'One part of a type\'s JSON Schema, named by an RFC 6901 JSON Pointer',
    ...guarded,
    query: DevPointerQuery,
    response: { schema: pointerResultSchema },
    errors: { 400: 'The pointer is malformed (invalid_pointer)', 404: 'The pointer names nothing in the schema (pointer_not_found)' },
    handler(ctx) {
      const { type, pointer } = ctx.query;
      const document = schemaDocument('dev', type, devResources[type as DevResourceType].schema);
      return { type, pointer, value: pointInto(document, pointer) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/dev/list',
    summary: 'List your resources of a type',
    description: `Same as \`GET /dev/{type}/list\`; type is one of ${devResourceTypes.join(', ')}.`,
    ...guarded,
    query: DevTypedListQuery,
    response: { schema: pageSchema(jsonObject()) },
    handler: (ctx) => listOf(ctx, ctx.query.type as DevResourceType),
  }),
];

export const developerRoutes: RouteDefinition[] = [
  ...devResourceTypes.flatMap(crudRoutes),
  ...tokenRoutes('hardware', 'hardware'),
  ...tokenRoutes('app', 'application'),
  ...hardwareLogRoutes,
  ...genericRoutes,
];
