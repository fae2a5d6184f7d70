/** The block and deployment responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { DocumentContent } from '../documents/index.js';
import { blockTypes, deploymentAccessLevels } from './entities/block.entity.js';

const content = Type.Unsafe<DocumentContent>({ type: 'object', description: 'Document JSON (`{ "type": "doc", "content": [...] }`).' });

export const deploymentInputSchema = Type.Object({
  name: Type.String(),
  type: Type.String(),
  required: Type.Boolean(),
  description: Type.Optional(Type.String()),
  default: Type.Optional(Type.Unknown()),
});

const blockProperties = {
  id: uuid({ description: 'The block id; also the id of its document (page) and of its file-tree node.' }),
  projectId: uuid(),
  name: Type.String(),
  description: Type.String(),
  type: stringEnum(blockTypes),
  status: stringEnum(['draft', 'deployed', 'trashed']),
  contentHash: nullable(Type.String(), { description: 'FNV-1a hash of the content (the document version).' }),
  access: nullable(stringEnum(deploymentAccessLevels)),
  deployType: nullable(Type.String()),
  cover: nullable(Type.String()),
  inputs: Type.Array(deploymentInputSchema),
  budget: nullable(Type.Object({ credits: Type.Integer() }), {
    description: 'The deployment\'s budget in credits: what its API runs may spend together (docs/runs.md, "Budgets"); null: none.',
  }),
  version: nullable(Type.String(), { description: 'The latest deployed version.' }),
  deployedAt: nullable(dateTime()),
  installedFrom: nullable(Type.Object({ blockId: uuid(), version: Type.String() })),
  trashedAt: nullable(dateTime()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
};

export const blockSchema = Type.Object(blockProperties);
export type BlockView = Static<typeof blockSchema>;

export const blockWithContentSchema = Type.Object({ ...blockProperties, content });
export type BlockWithContentView = Static<typeof blockWithContentSchema>;

export const blockPageSchema = pageSchema(blockSchema);

export const blockSearchItemSchema = Type.Object({ ...blockProperties, nextVersion: Type.Optional(Type.String()) });

export const blockVersionSchema = Type.Object({
  id: uuid(),
  blockId: uuid(),
  version: Type.String(),
  contentHash: Type.String(),
  name: Type.String(),
  description: Type.String(),
  type: stringEnum(blockTypes),
  access: stringEnum(deploymentAccessLevels),
  deployType: nullable(Type.String()),
  cover: nullable(Type.String()),
  inputs: Type.Array(deploymentInputSchema),
  deployedBy: nullable(uuid()),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type BlockVersionView = Static<typeof blockVersionSchema>;

export const deployResultSchema = Type.Object({
  block: blockSchema,
  version: blockVersionSchema,
  deploymentToken: Type.Optional(Type.String({ description: 'Answered only when a deployment token was just issued (access `token`); it is not shown again.' })),
});

export const deploymentSettingsResultSchema = Type.Object({
  block: blockSchema,
  version: nullable(blockVersionSchema, { description: 'The version published by this call (first deployment only), else null.' }),
  deploymentToken: Type.Optional(Type.String({ description: 'Answered only when a deployment token was just issued; it is not shown again.' })),
});

export const nextVersionSchema = Type.Object({
  blockId: uuid(),
  version: Type.String({ description: 'The next free version.' }),
  latestVersion: nullable(Type.String()),
});

const deploymentProperties = {
  id: uuid(),
  blockId: uuid(),
  projectId: uuid(),
  name: Type.String(),
  description: Type.String(),
  type: stringEnum(blockTypes),
  access: stringEnum(deploymentAccessLevels),
  deployType: nullable(Type.String()),
  cover: nullable(Type.String()),
  inputs: Type.Array(deploymentInputSchema),
  latestVersion: Type.String(),
  deployedAt: dateTime(),
  createdAt: dateTime(),
  updatedAt: dateTime(),
};

export const deploymentSchema = Type.Object(deploymentProperties);
export type DeploymentView = Static<typeof deploymentSchema>;
export const deploymentSearchItemSchema = Type.Object({ ...deploymentProperties, nextVersion: Type.Optional(Type.String()) });

export const deploymentDetailSchema = Type.Object({
  ...deploymentProperties,
  version: Type.String({ description: 'The version shown (the `version` asked for, or the latest).' }),
  versionDeployedAt: dateTime(),
  contentHash: Type.String(),
  content,
  versions: Type.Array(Type.String(), { description: 'Every deployed version, newest first.' }),
});
export type DeploymentDetailView = Static<typeof deploymentDetailSchema>;

export const searchResultSchema = Type.Object({
  type: stringEnum(['page', 'deployment']),
  items: Type.Array(Type.Union([blockSearchItemSchema, deploymentSearchItemSchema])),
  total: Type.Integer(),
  page: Type.Integer(),
  size: Type.Integer(),
});

export const removeResultSchema = Type.Object({
  id: uuid(),
  result: stringEnum(['trashed', 'deleted'], {
    description: '`trashed`: moved to the trash (restore with POST /project/:pid/restore/:bid); `deleted`: gone for good.',
  }),
});

export const restoreTrashResultSchema = Type.Object({
  projectId: uuid(),
  restored: Type.Array(uuid(), { description: 'Ids of the restored blocks.' }),
});

export const runSummarySchema = Type.Object(
  { id: Type.String(), documentId: Type.String(), status: Type.String(), createdAt: dateTime(), updatedAt: dateTime() },
  { additionalProperties: true },
);
