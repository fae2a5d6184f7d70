/** JSON Schemas of the document responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const contentSchema = { type: 'object', description: 'Rich-text document JSON: { type: "doc", content: [nodes] }.' };

export const documentSchema = {
  type: 'object',
  required: ['id', 'project_id', 'title', 'doc_type', 'content', 'content_hash', 'content_source', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    project_id: { type: 'string', format: 'uuid' },
    title: nullable({ type: 'string' }),
    doc_type: { type: 'string' },
    content: contentSchema,
    content_hash: { type: 'string', pattern: '^[0-9a-f]{8}$', description: 'FNV-1a 32 of the canonical JSON; the version.' },
    content_source: { enum: ['rest', 'collab'], description: '`collab` while a collaborative session holds the document.' },
    created_at: dateTime,
    updated_at: dateTime,
  },
};

export const contentResponseSchema = {
  type: 'object',
  required: ['content', 'content_hash', 'title', 'updated_at'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    project_id: { type: 'string', format: 'uuid' },
    content: { anyOf: [contentSchema, { type: 'string', description: 'markdown-ir text (format=markdown-ir)' }] },
    content_hash: { type: 'string', pattern: '^[0-9a-f]{8}$' },
    content_source: { enum: ['rest', 'collab'] },
    title: nullable({ type: 'string' }),
    format: { enum: ['json', 'markdown-ir'] },
    updated_at: dateTime,
  },
};

export const editResultSchema = {
  type: 'object',
  required: ['success', 'version', 'results'],
  properties: {
    success: { const: true },
    version: { type: 'string', description: 'The new content_hash.' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: ['op', 'success'],
        properties: { op: { type: 'string' }, success: { type: 'boolean' }, data: { description: 'For list, read, read_range (and the id of an inserted block).' } },
      },
    },
  },
};

export const successSchema = { type: 'object', required: ['success'], properties: { success: { const: true } } };

export const versionSchema = {
  type: 'object',
  required: ['id', 'document_id', 'version', 'title', 'source', 'author', 'author_kind', 'created_at'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    document_id: { type: 'string', format: 'uuid' },
    version: { type: 'string', description: 'The content_hash of this version.' },
    title: nullable({ type: 'string' }),
    source: { type: 'string' },
    author: nullable({ type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } }),
    author_kind: nullable({ type: 'string' }),
    created_at: dateTime,
    content: contentSchema,
  },
};

export const versionPageSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: versionSchema }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
};

export const uiStateSchema = {
  type: 'object',
  required: ['document_id', 'annotations', 'pending_changes', 'preview_state', 'thumbnail', 'updated_at'],
  properties: {
    document_id: { type: 'string', format: 'uuid' },
    annotations: { type: 'array', items: { type: 'object' } },
    pending_changes: nullable({ type: 'object', properties: { changes: { type: 'array' }, summary: { type: 'string' }, submitted_at: dateTime, submitted_by: { type: 'string' } } }),
    preview_state: { type: 'object', properties: { screen: { type: 'string' }, viewport: { type: 'object' }, render_state: { type: 'object' } } },
    thumbnail: { type: 'object', properties: { url: { type: 'string' }, data_url: { type: 'string' }, width: { type: 'integer' }, height: { type: 'integer' }, alt: { type: 'string' } } },
    updated_at: nullable(dateTime),
  },
};

export const fileNodeResponseSchema = {
  type: 'object',
  required: ['success', 'node'],
  properties: { success: { const: true }, node: { type: 'object', description: 'File-tree node: key, label, type, docType, isLeaf (and children for folders).' } },
};
