import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { pageOf, paging } from '../../kernel/http/dto/paging.js';
import { AiListQuery, AiModelBody, AiModelParams, AiToolBody, AiToolParams } from './dto/ai.dto.js';
import type { AiModel } from './entities/ai-model.entity.js';
import { AiModelService } from './services/ai-model.service.js';
import { AiToolService } from './services/ai-tool.service.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { aiModelSchema, aiToolSchema, toAiModelView, toAiToolView } from './views.js';

const auth = ['jwt', 'api_key', 'agent_token', 'oauth'] as const;
const modelTags = ['AI models'];
const toolTags = ['AI tools'];
const modelNotFound = 'No AI model of yours has this id (model_not_found)';
const toolNotFound = 'No AI tool of yours has this id (tool_not_found)';
/** The spec lists 400 (not 422) for the AI tools area. */
const toolValidation = { status: 400, code: 'validation_failed' };

const modelView = (service: AiModelService, model: AiModel) => toAiModelView(model, service.maskedConf(model), service.provider(model.service) !== undefined);

export const aiRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/ai/models',
    summary: 'List your AI models',
    tags: modelTags,
    auth,
    query: AiListQuery,
    response: { schema: pageSchema(aiModelSchema) },
    async handler(ctx) {
      const service = ctx.get(AiModelService);
      const p = paging(ctx.query);
      const { items, total } = await service.list(ctx.em, ctx.requirePrincipal().userId, p);
      return pageOf(items.map((m) => modelView(service, m)), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/ai/models',
    summary: 'Create an AI model',
    description: "`service` selects the provider adapter; when it is installed, its parseConf checks `conf`. Secret conf keys (`apiKey`, or the adapter's `secretConfKeys`) are encrypted at rest and answered masked.",
    tags: modelTags,
    auth,
    body: AiModelBody,
    response: { status: 201, schema: aiModelSchema },
    errors: { 422: 'Body invalid, or conf rejected by the adapter (invalid_model_conf, with details)' },
    async handler(ctx) {
      const service = ctx.get(AiModelService);
      const model = await service.create(ctx.em, ctx.requirePrincipal().userId, ctx.body);
      return Reply.json(modelView(service, model), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/ai/models/:modelId',
    summary: 'One of your AI models',
    tags: modelTags,
    auth,
    params: AiModelParams,
    response: { schema: aiModelSchema },
    errors: { 404: modelNotFound },
    async handler(ctx) {
      const service = ctx.get(AiModelService);
      return modelView(service, await service.get(ctx.em, ctx.requirePrincipal().userId, ctx.params.modelId));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/ai/models/:modelId',
    summary: 'Update an AI model',
    description: 'The body is the same as on create and replaces the model. A secret sent as `********` keeps the stored secret.',
    tags: modelTags,
    auth,
    params: AiModelParams,
    body: AiModelBody,
    response: { schema: aiModelSchema },
    errors: { 404: modelNotFound, 422: 'Body invalid, or conf rejected by the adapter (invalid_model_conf)' },
    async handler(ctx) {
      const service = ctx.get(AiModelService);
      return modelView(service, await service.update(ctx.em, ctx.requirePrincipal().userId, ctx.params.modelId, ctx.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/ai/models/:modelId',
    summary: 'Delete an AI model',
    description: 'Irreversible. Bots that name the model answer `model_not_found` until they name another.',
    tags: modelTags,
    auth,
    params: AiModelParams,
    response: { status: 204 },
    errors: { 404: modelNotFound },
    async handler(ctx) {
      await ctx.get(AiModelService).remove(ctx.em, ctx.requirePrincipal().userId, ctx.params.modelId);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/ai/tools',
    summary: 'List your AI tools',
    tags: toolTags,
    auth,
    query: AiListQuery,
    validationError: toolValidation,
    response: { schema: pageSchema(aiToolSchema) },
    errors: { 400: 'Query invalid (validation_failed)' },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(AiToolService).list(ctx.em, ctx.requirePrincipal().userId, p);
      return pageOf(items.map(toAiToolView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/ai/tools',
    summary: 'Create an AI tool',
    description: 'Each action (`http` or `mcp`) is offered to models as one function (docs/ai.md).',
    tags: toolTags,
    auth,
    body: AiToolBody,
    validationError: toolValidation,
    response: { status: 201, schema: aiToolSchema },
    errors: { 400: 'Body invalid (validation_failed), or an action is not valid (invalid_tool_action, with details)' },
    async handler(ctx) {
      return Reply.json(toAiToolView(await ctx.get(AiToolService).create(ctx.em, ctx.requirePrincipal().userId, ctx.body)), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/ai/tools/:toolId',
    summary: 'One of your AI tools',
    tags: toolTags,
    auth,
    params: AiToolParams,
    response: { schema: aiToolSchema },
    errors: { 404: toolNotFound },
    async handler(ctx) {
      return toAiToolView(await ctx.get(AiToolService).get(ctx.em, ctx.requirePrincipal().userId, ctx.params.toolId));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/ai/tools/:toolId',
    summary: 'Update an AI tool',
    description: 'The body is the same as on create and replaces the tool.',
    tags: toolTags,
    auth,
    params: AiToolParams,
    body: AiToolBody,
    validationError: toolValidation,
    response: { schema: aiToolSchema },
    errors: { 400: 'Body invalid (validation_failed), or an action is not valid (invalid_tool_action)', 404: toolNotFound },
    async handler(ctx) {
      return toAiToolView(await ctx.get(AiToolService).update(ctx.em, ctx.requirePrincipal().userId, ctx.params.toolId, ctx.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/ai/tools/:toolId',
    summary: 'Delete an AI tool',
    tags: toolTags,
    auth,
    params: AiToolParams,
    response: { status: 204 },
    errors: { 404: toolNotFound },
    async handler(ctx) {
      await ctx.get(AiToolService).remove(ctx.em, ctx.requirePrincipal().userId, ctx.params.toolId);
    },
  }),
];
