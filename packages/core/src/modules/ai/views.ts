import type { AiModel } from './entities/ai-model.entity.js';
import type { AiTool } from './entities/ai-tool.entity.js';
import { maskConf } from './services/secret-fields.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableString = { anyOf: [{ type: 'string' }, { type: 'null' }] };

export const toAiModelView = (model: AiModel, maskedConf: Record<string, unknown>, providerInstalled: boolean) => ({
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
export const maskActions = (actions: AiTool['actions']) => actions.map((action) => (action.conf === undefined ? action : { ...action, conf: maskConf(action.conf) }));

export const toAiToolView = (tool: AiTool) => ({
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

export const aiModelSchema = {
  type: 'object',
  required: ['id', 'ownerId', 'name', 'desc', 'service', 'conf', 'providerInstalled', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    ownerId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    desc: nullableString,
    service: nullableString,
    conf: { type: 'object', additionalProperties: true, description: 'Provider settings; secret keys are answered as `********`.' },
    providerInstalled: { type: 'boolean', description: 'Whether this deployment has an adapter for `service`.' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const aiToolActionSchema = {
  type: 'object',
  required: ['name', 'type'],
  properties: { name: { type: 'string' }, type: { enum: ['http', 'mcp', 'knowledge'] }, conf: { type: 'object', additionalProperties: true } },
};

export const aiToolSchema = {
  type: 'object',
  required: ['id', 'ownerId', 'name', 'desc', 'service', 'conf', 'actions', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    ownerId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    desc: nullableString,
    service: nullableString,
    conf: { type: 'object', additionalProperties: true, description: 'Free-form settings; secrets (secret-looking keys, `headers` values) are answered as `********`.' },
    actions: { type: 'array', items: aiToolActionSchema },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const pageSchema = (item: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: item }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});
