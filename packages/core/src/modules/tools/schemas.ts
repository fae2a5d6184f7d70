/** JSON Schemas of the tool service's responses, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;

export const vdbRecordSchema = {
  type: 'object',
  required: ['id', 'className', 'content', 'tags', 'metadata', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    className: { type: 'string' },
    content: { type: 'string' },
    tags: { type: 'array', items: { type: ['string', 'number', 'boolean'] } },
    metadata: { type: 'object', additionalProperties: true },
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const vdbListSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size', 'skip', 'limit'],
  properties: {
    items: { type: 'array', items: vdbRecordSchema },
    total: { type: 'integer', description: 'Records that match `where`.' },
    page: { type: 'integer', description: '1 + floor(skip / limit).' },
    size: { type: 'integer', description: 'Same as limit.' },
    skip: { type: 'integer' },
    limit: { type: 'integer' },
  },
};

export const vdbSearchSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: {
    items: {
      type: 'array',
      description: 'Nearest first.',
      items: {
        ...vdbRecordSchema,
        required: [...vdbRecordSchema.required, 'score', 'distance'],
        properties: {
          ...vdbRecordSchema.properties,
          score: { type: 'number', description: 'Cosine similarity to the query (1 is identical direction).' },
          distance: { type: 'number', description: 'Cosine distance, 1 − score.' },
        },
      },
    },
    total: { type: 'integer', description: 'Number of hits (limit, or fewer when fewer records match).' },
    page: { type: 'integer', const: 1 },
    size: { type: 'integer', description: 'The limit asked for.' },
  },
};

export const vdbDeletedSchema = {
  type: 'object',
  required: ['id', 'deleted'],
  properties: { id: { type: 'string', format: 'uuid' }, deleted: { const: true } },
};
