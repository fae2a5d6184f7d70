import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { pageOf, paging, PageQuery } from '../../../kernel/http/dto/paging.js';
import { BidParams, blockAuth } from '../../blocks/index.js';
import { CreateScheduleBody, ScheduleListQuery, ScheduleParams, UpdateScheduleBody } from '../dto/triggers.dto.js';
import { ScheduleService } from '../services/schedule.service.js';
import { scheduleFirePageSchema, schedulePageSchema, scheduleSchema, toScheduleFireView, toScheduleView } from '../views.js';

const tags = ['Schedules'];
const missing = 'No such schedule, or no access to its block (schedule_not_found)';
const noWrite = "No write permission in the block's project (block_access_denied)";
const badSchedule = 'The cron expression cannot be read or has no future due time (invalid_cron); not an IANA time zone (invalid_timezone); bad body (validation_failed)';

/** Schedules of deployments: created under the block, then managed by id (also from `trellis schedules`). */
export function scheduleRoutes(): RouteDefinition[] {
  const change = (path: string, summary: string, paused: boolean) =>
    defineRoute({
      method: 'POST',
      path,
      summary,
      tags,
      auth: blockAuth,
      params: ScheduleParams,
      response: { schema: scheduleSchema },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        return toScheduleView(await ctx.get(ScheduleService).pause(ctx.em, ctx.requirePrincipal(), ctx.params.scheduleId, paused));
      },
    });
  return [
    defineRoute({
      method: 'POST',
      path: '/block/:bid/schedules',
      summary: 'Schedule runs of a deployed block',
      description: 'Each due time of `cron` in `timezone` starts one run of the deployment with `inputs`, across all processes (docs/schedules.md).',
      tags,
      auth: blockAuth,
      params: BidParams,
      body: CreateScheduleBody,
      response: { status: 201, schema: scheduleSchema },
      errors: { 403: noWrite, 404: 'No such block, or no access to it (block_not_found); never deployed (deployment_not_found)', 422: badSchedule },
      async handler(ctx) {
        return Reply.json(toScheduleView(await ctx.get(ScheduleService).create(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.body)), 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/block/:bid/schedules',
      summary: "A deployed block's schedules",
      tags,
      auth: blockAuth,
      params: BidParams,
      query: PageQuery,
      response: { schema: schedulePageSchema },
      errors: { 404: 'No such block, or no access to it (block_not_found)' },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(ScheduleService).list(ctx.em, ctx.requirePrincipal(), ctx.params.bid, p);
        return pageOf(items.map(toScheduleView), total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/schedules',
      summary: 'Schedules: those you created, or those of one block',
      tags,
      auth: blockAuth,
      query: ScheduleListQuery,
      response: { schema: schedulePageSchema },
      errors: { 404: 'No such block, or no access to it (block_not_found)' },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(ScheduleService).list(ctx.em, ctx.requirePrincipal(), ctx.query.blockId, p);
        return pageOf(items.map(toScheduleView), total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/schedules/:scheduleId',
      summary: 'One schedule',
      tags,
      auth: blockAuth,
      params: ScheduleParams,
      response: { schema: scheduleSchema },
      errors: { 404: missing },
      async handler(ctx) {
        return toScheduleView(await ctx.get(ScheduleService).get(ctx.em, ctx.requirePrincipal(), ctx.params.scheduleId));
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/schedules/:scheduleId',
      summary: 'Change a schedule',
      tags,
      auth: blockAuth,
      params: ScheduleParams,
      body: UpdateScheduleBody,
      response: { schema: scheduleSchema },
      errors: { 403: noWrite, 404: missing, 422: badSchedule },
      async handler(ctx) {
        return toScheduleView(await ctx.get(ScheduleService).update(ctx.em, ctx.requirePrincipal(), ctx.params.scheduleId, ctx.body));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/schedules/:scheduleId',
      summary: 'Delete a schedule',
      tags,
      auth: blockAuth,
      params: ScheduleParams,
      response: { status: 204 },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        await ctx.get(ScheduleService).remove(ctx.em, ctx.requirePrincipal(), ctx.params.scheduleId);
      },
    }),
    change('/schedules/:scheduleId/pause', 'Pause a schedule (no runs until resumed)', true),
    change('/schedules/:scheduleId/resume', 'Resume a schedule (from now: what fell due while paused does not run)', false),
    defineRoute({
      method: 'GET',
      path: '/schedules/:scheduleId/runs',
      summary: 'The due times a schedule ran, newest first, with their run ids (or why none started)',
      tags,
      auth: blockAuth,
      params: ScheduleParams,
      query: PageQuery,
      response: { schema: scheduleFirePageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(ScheduleService).fires(ctx.em, ctx.requirePrincipal(), ctx.params.scheduleId, p);
        return pageOf(items.map(toScheduleFireView), total, p);
      },
    }),
  ];
}
