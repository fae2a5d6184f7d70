import { dateTime, jsonObject, nullable, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { AiModel } from './entities/ai-model.entity.js';
import type { AiTool } from './entities/ai-tool.entity.js';
import { maskConf } from './services/secret-fields.js';

/** The AI model and tool responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
export const aiModelSchema = Type.Object({
  id: uuid(),
  ownerId: uuid(),
  name: Type.String(),
  desc: nullable(Type.String()),
  service: nullable(Type.String()),
  conf: jsonObject({ additionalProperties: true, description: 'Provider settings; secret keys are answered as `********`.' }),
  providerInstalled: Type.Boolean({ description: 'Whether this deployment has an adapter for `service`.' }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type AiModelView = Static<typeof aiModelSchema>;

export const aiToolActionTypes = ['http', 'mcp', 'knowledge'] as const;

export const aiToolActionSchema = Type.Object({
  name: Type.String(),
  type: stringEnum(aiToolActionTypes),
  conf: Type.Optional(jsonObject({ additionalProperties: true })),
});
export type AiToolActionView = Static<typeof aiToolActionSchema>;

export const aiToolSchema = Type.Object({
  id: uuid(),
  ownerId: uuid(),
  name: Type.String(),
  desc: nullable(Type.String()),
  service: nullable(Type.String()),
  conf: jsonObject({ additionalProperties: true, description: 'Free-form settings; secrets (secret-looking keys, `headers` values) are answered as `********`.' }),
  actions: Type.Array(aiToolActionSchema),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type AiToolView = Static<typeof aiToolSchema>;

export const toAiModelView = (model: AiModel, maskedConf: Record<string, unknown>, providerInstalled: boolean): AiModelView => ({
  id: model.id,
  ownerId: model.owner.id,
  name: model.name,
  desc: model.desc,
  service: model.service,
  conf: maskedConf,
  providerInstalled,
  createdAt: model.createdAt.toISOString(),
  updatedAt: model.updatedAt.toISOString(),
});

/** Actions with their secrets (header values, secret-looking keys) masked. */
export const maskActions = (actions: AiTool['actions']): AiToolActionView[] =>
  actions.map((action) => ({
    ...action,
    // Stored actions passed AiToolService.validateActions, which admits only these types.
    type: action.type as AiToolActionView['type'],
    ...(action.conf === undefined ? {} : { conf: maskConf(action.conf) }),
  }));

export const toAiToolView = (tool: AiTool): AiToolView => ({
  id: tool.id,
  ownerId: tool.owner.id,
  name: tool.name,
  desc: tool.desc,
  service: tool.service,
  conf: maskConf(tool.conf),
  actions: maskActions(tool.actions),
  createdAt: tool.createdAt.toISOString(),
  updatedAt: tool.updatedAt.toISOString(),
});

