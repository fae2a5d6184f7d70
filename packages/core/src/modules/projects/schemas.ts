/** JSON Schemas of the project responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;

export const fileTreeNodeSchema: Record<string, unknown> = {
  type: 'object',
  required: ['key', 'label', 'type', 'docType', 'isLeaf'],
  properties: {
    key: { type: 'string', description: 'Document id for files; a generated id for folders.' },
    label: { type: 'string' },
    type: { enum: ['file', 'folder'] },
    docType: { type: 'string', description: '`document` for documents, `folder` for folders.' },
    isLeaf: { type: 'boolean' },
    children: { type: 'array', items: { type: 'object', description: 'File-tree nodes (folders only).' } },
  },
};

export const projectSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'template', 'tools', 'access', 'ownerId', 'teamId', 'permissions', 'filesFolder', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    description: { type: 'string' },
    template: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    tools: { type: 'array', items: { type: 'string' } },
    access: { enum: ['private', 'team', 'public'] },
    ownerId: { type: 'string', format: 'uuid' },
    teamId: { type: 'string', format: 'uuid' },
    permissions: { type: 'array', items: { enum: ['read', 'write', 'execute'] }, description: "The caller's permissions." },
    filesFolder: { type: 'array', items: fileTreeNodeSchema, description: 'The file tree: folders and documents.' },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

/** A project in a list: the project without its file tree. */
export const projectSummarySchema = {
  ...projectSchema,
  required: projectSchema.required.filter((field) => field !== 'filesFolder'),
  properties: Object.fromEntries(Object.entries(projectSchema.properties).filter(([field]) => field !== 'filesFolder')),
};

export const projectPageSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: projectSummarySchema }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
};

export const projectDeletedSchema = {
  type: 'object',
  required: ['id', 'deleted'],
  properties: { id: { type: 'string', format: 'uuid' }, deleted: { const: true } },
};
