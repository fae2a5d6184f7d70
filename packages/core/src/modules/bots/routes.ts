import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { pageOf, paging } from '../../kernel/http/dto/paging.js';
import { dateTime, jsonObject, pageSchema, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import { BotCreateBody, BotListQuery, BotParams, BotUpdateBody } from './dto/bot.dto.js';
import type { Bot } from './entities/bot.entity.js';
import { BotService } from './services/bot.service.js';

const auth = ['jwt', 'api_key', 'agent_token', 'oauth'] as const;
const tags = ['Bots'];
const notFound = 'No bot of yours has this id (bot_not_found)';
const invalidConf = 'conf.modelId or conf.toolIds names an AI model or tool that is not yours, or a conf field has the wrong type (invalid_bot_conf, with details)';
/** A bot as the API answers it, declared once: its JSON Schema (OpenAPI) and TypeScript type. */
export const botSchema = Type.Object({
  id: uuid(),
  ownerId: uuid(),
  name: Type.String(),
  conf: jsonObject({ additionalProperties: true, description: 'avatar, desc, modelId, prompt, toolIds, and any other keys given.' }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type BotView = Static<typeof botSchema>;

export const toBotView = (bot: Bot): BotView => ({
  id: bot.id,
  ownerId: bot.owner.id,
  name: bot.name,
  conf: bot.conf,
  createdAt: bot.createdAt.toISOString(),
  updatedAt: bot.updatedAt.toISOString(),
});

export const botRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/bot',
    summary: 'List your bots',
    tags,
    auth,
    query: BotListQuery,
    response: { schema: pageSchema(botSchema) },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(BotService).list(ctx.em, ctx.requirePrincipal().userId, p);
      return pageOf(items.map(toBotView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/bot',
    summary: 'Create a bot',
    tags,
    auth,
    body: BotCreateBody,
    // The bot area answers a body that fails validation with 400, on create as on update.
    validationError: { status: 400, code: 'validation_failed' },
    response: { status: 201, schema: botSchema },
    errors: { 400: `Body invalid (validation_failed), or ${invalidConf}` },
    async handler(ctx) {
      return Reply.json(toBotView(await ctx.get(BotService).create(ctx.em, ctx.requirePrincipal().userId, ctx.body)), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/bot/:botId',
    summary: 'One of your bots',
    tags,
    auth,
    params: BotParams,
    response: { schema: botSchema },
    errors: { 404: notFound },
    async handler(ctx) {
      return toBotView(await ctx.get(BotService).get(ctx.em, ctx.requirePrincipal().userId, ctx.params.botId));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/bot/:botId',
    summary: 'Update a bot',
    description: 'Fields left out stay as they are; `conf` replaces the stored conf as a whole.',
    tags,
    auth,
    params: BotParams,
    body: BotUpdateBody,
    validationError: { status: 400, code: 'validation_failed' },
    response: { schema: botSchema },
    errors: { 400: `Body invalid (validation_failed), or ${invalidConf}`, 404: notFound },
    async handler(ctx) {
      return toBotView(await ctx.get(BotService).update(ctx.em, ctx.requirePrincipal().userId, ctx.params.botId, ctx.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/bot/:botId',
    summary: 'Delete a bot',
    description: 'Irreversible: also deletes every conversation of the bot and their messages.',
    tags,
    auth,
    params: BotParams,
    response: { status: 204 },
    errors: { 404: notFound },
    async handler(ctx) {
      await ctx.get(BotService).remove(ctx.em, ctx.requirePrincipal().userId, ctx.params.botId);
    },
  }),
];
