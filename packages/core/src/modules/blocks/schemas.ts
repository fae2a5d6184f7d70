/** JSON Schemas of the block and deployment responses, for the OpenAPI document. */
import { blockTypes, deploymentAccessLevels } from './entities/block.entity.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const uuid = { type: 'string', format: 'uuid' } as const;
const content = { type: 'object', description: 'Document JSON (`{ "type": "doc", "content": [...] }`).' } as const;

export const deploymentInputSchema = {
  type: 'object',
  required: ['name', 'type', 'required'],
  properties: { name: { type: 'string' }, type: { type: 'string' }, required: { type: 'boolean' }, description: { type: 'string' }, default: {} },
};

const blockProperties = {
  id: { ...uuid, description: 'The block id; also the id of its document (page) and of its file-tree node.' },
  projectId: uuid,
  name: { type: 'string' },
  description: { type: 'string' },
  type: { enum: [...blockTypes] },
  status: { enum: ['draft', 'deployed', 'trashed'] },
  contentHash: { ...nullable({ type: 'string' }), description: 'FNV-1a hash of the content (the document version).' },
  access: nullable({ enum: [...deploymentAccessLevels] }),
  deployType: nullable({ type: 'string' }),
  cover: nullable({ type: 'string' }),
  inputs: { type: 'array', items: deploymentInputSchema },
  budget: {
    ...nullable({ type: 'object', required: ['credits'], properties: { credits: { type: 'integer' } } }),
    description: 'The deployment\'s budget in credits: what its API runs may spend together (docs/runs.md, "Budgets"); null: none.',
  },
  version: { ...nullable({ type: 'string' }), description: 'The latest deployed version.' },
  deployedAt: nullable(dateTime),
  installedFrom: nullable({ type: 'object', required: ['blockId', 'version'], properties: { blockId: uuid, version: { type: 'string' } } }),
  trashedAt: nullable(dateTime),
  createdAt: dateTime,
  updatedAt: dateTime,
};
const blockRequired = Object.keys(blockProperties);

export const blockSchema = { type: 'object', required: blockRequired, properties: blockProperties };

export const blockWithContentSchema = { type: 'object', required: [...blockRequired, 'content'], properties: { ...blockProperties, content } };

export const deployedBlockSchema = {
  type: 'object',
  required: blockRequired,
  properties: {
    ...blockProperties,
    deploymentToken: { type: 'string', description: 'The deployment token, answered only when one was just issued (access `token`). Store it: it is not shown again.' },
  },
};

export const page = (items: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});

export const blockPageSchema = page(blockSchema);

export const blockSearchItemSchema = { type: 'object', required: blockRequired, properties: { ...blockProperties, nextVersion: { type: 'string' } } };

const versionProperties = {
  id: uuid,
  blockId: uuid,
  version: { type: 'string' },
  contentHash: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  type: { enum: [...blockTypes] },
  access: { enum: [...deploymentAccessLevels] },
  deployType: nullable({ type: 'string' }),
  cover: nullable({ type: 'string' }),
  inputs: { type: 'array', items: deploymentInputSchema },
  deployedBy: nullable(uuid),
  createdAt: dateTime,
  updatedAt: dateTime,
};

export const blockVersionSchema = { type: 'object', required: Object.keys(versionProperties), properties: versionProperties };

export const deployResultSchema = {
  type: 'object',
  required: ['block', 'version'],
  properties: {
    block: blockSchema,
    version: blockVersionSchema,
    deploymentToken: { type: 'string', description: 'Answered only when a deployment token was just issued (access `token`); it is not shown again.' },
  },
};

export const deploymentSettingsResultSchema = {
  type: 'object',
  required: ['block', 'version'],
  properties: {
    block: blockSchema,
    version: { ...nullable(blockVersionSchema), description: 'The version published by this call (first deployment only), else null.' },
    deploymentToken: { type: 'string', description: 'Answered only when a deployment token was just issued; it is not shown again.' },
  },
};

export const nextVersionSchema = {
  type: 'object',
  required: ['blockId', 'version', 'latestVersion'],
  properties: { blockId: uuid, version: { type: 'string', description: 'The next free version.' }, latestVersion: nullable({ type: 'string' }) },
};

const deploymentProperties = {
  id: uuid,
  blockId: uuid,
  projectId: uuid,
  name: { type: 'string' },
  description: { type: 'string' },
  type: { enum: [...blockTypes] },
  access: { enum: [...deploymentAccessLevels] },
  deployType: nullable({ type: 'string' }),
  cover: nullable({ type: 'string' }),
  inputs: { type: 'array', items: deploymentInputSchema },
  latestVersion: { type: 'string' },
  deployedAt: dateTime,
  createdAt: dateTime,
  updatedAt: dateTime,
};

export const deploymentSchema = { type: 'object', required: Object.keys(deploymentProperties), properties: deploymentProperties };
export const deploymentSearchItemSchema = { type: 'object', required: Object.keys(deploymentProperties), properties: { ...deploymentProperties, nextVersion: { type: 'string' } } };

export const deploymentDetailSchema = {
  type: 'object',
  required: [...Object.keys(deploymentProperties), 'version', 'versionDeployedAt', 'contentHash', 'content', 'versions'],
  properties: {
    ...deploymentProperties,
    version: { type: 'string', description: 'The version shown (the `version` asked for, or the latest).' },
    versionDeployedAt: dateTime,
    contentHash: { type: 'string' },
    content,
    versions: { type: 'array', items: { type: 'string' }, description: 'Every deployed version, newest first.' },
  },
};

export const searchResultSchema = {
  type: 'object',
  required: ['type', 'items', 'total', 'page', 'size'],
  properties: {
    type: { enum: ['page', 'deployment'] },
    items: { type: 'array', items: { anyOf: [blockSearchItemSchema, deploymentSearchItemSchema] } },
    total: { type: 'integer' },
    page: { type: 'integer' },
    size: { type: 'integer' },
  },
};

export const removeResultSchema = {
  type: 'object',
  required: ['id', 'result'],
  properties: { id: uuid, result: { enum: ['trashed', 'deleted'], description: '`trashed`: moved to the trash (restore with POST /project/:pid/restore/:bid); `deleted`: gone for good.' } },
};

export const restoreTrashResultSchema = {
  type: 'object',
  required: ['projectId', 'restored'],
  properties: { projectId: uuid, restored: { type: 'array', items: uuid, description: 'Ids of the restored blocks.' } },
};

export const runSummarySchema = {
  type: 'object',
  required: ['id', 'documentId', 'status', 'createdAt', 'updatedAt'],
  additionalProperties: true,
  properties: { id: { type: 'string' }, documentId: { type: 'string' }, status: { type: 'string' }, createdAt: dateTime, updatedAt: dateTime },
};
