/**
 * JSON Schemas (draft 2020-12) of the developer resources as the API returns them. They document
 * the responses in the OpenAPI document and are what `GET /dev/schema?type=` answers (with
 * `$schema` and `$id` added).
 */
export type JsonSchema = Record<string, unknown>;

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });
const readOnlyId = { type: 'string', format: 'uuid', readOnly: true } as const;
const config = { type: 'object', additionalProperties: true, description: 'Free-form settings.' } as const;
const description = { ...nullable({ type: 'string', maxLength: 10_000 }), description: 'Free text.' };
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

const common = {
  id: readOnlyId,
  ownerId: { type: 'string', format: 'uuid', readOnly: true, description: 'The developer who owns it.' },
  createdAt: { ...dateTime, readOnly: true },
  updatedAt: { ...dateTime, readOnly: true },
};

const resource = (title: string, text: string, properties: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  title,
  description: text,
  type: 'object',
  required: ['id', 'ownerId', ...required, 'createdAt', 'updatedAt'],
  properties: { id: common.id, ownerId: common.ownerId, ...properties, createdAt: common.createdAt, updatedAt: common.updatedAt },
  additionalProperties: false,
});

export const tokenInfoSchema: JsonSchema = {
  ...nullable({
    type: 'object',
    required: ['prefix', 'issuedAt'],
    properties: { prefix: { type: 'string', description: 'First characters of the token, to recognise it.' }, issuedAt: dateTime },
  }),
  readOnly: true,
  description: 'The device token currently issued (never the token itself), or null.',
};

export const hardwareSchema = resource(
  'hardware',
  'A hardware device. It connects to /v3/wss/{id} with its device token.',
  {
    name,
    description,
    config,
    status: { enum: ['pending', 'active', 'resetting'], readOnly: true, description: 'pending until the device first reports; resetting after a reset until it reports again.' },
    lastSeenAt: { ...nullable(dateTime), readOnly: true },
    sim: {
      type: 'object',
      readOnly: true,
      required: ['reported', 'reportedAt', 'synced', 'syncedAt'],
      properties: {
        reported: { ...nullable({ type: 'object' }), description: 'SIM information the device last reported.' },
        reportedAt: nullable(dateTime),
        synced: { ...nullable({ type: 'object' }), description: 'SIM information adopted by the last sync_sim.' },
        syncedAt: nullable(dateTime),
      },
    },
    token: tokenInfoSchema,
  },
  ['name', 'description', 'config', 'status', 'lastSeenAt', 'sim', 'token'],
);

export const modelSchema = resource(
  'model',
  'An AI model configuration (the AI area\'s model: description is its desc, config its conf).',
  { name, type: { type: 'string', minLength: 1, maxLength: 64 }, description, config, service: { ...nullable({ type: 'string' }), readOnly: true, description: 'AI provider serving the model (set through the AI area).' } },
  ['name', 'type', 'description', 'config', 'service'],
);

export const botSchema = resource(
  'bot',
  'A bot (the bots area\'s bot: description is conf.desc, config is conf).',
  { name, description, config },
  ['name', 'description', 'config'],
);

export const convSchema = resource(
  'conv',
  'A conversation (the conversations area\'s conversation: title is conf.title and name, description is conf.description, config is conf).',
  {
    title: name,
    description,
    config,
    botId: { ...nullable({ type: 'string', format: 'uuid' }), readOnly: true },
    members: { type: 'array', items: { type: 'string' }, readOnly: true },
  },
  ['title', 'description', 'config', 'botId', 'members'],
);

export const taskSchema = resource('task', 'A task definition.', { name, description, config }, ['name', 'description', 'config']);

export const toolSchema = resource(
  'tool',
  'An AI tool (the AI area\'s tool: description is its desc, config its conf).',
  {
    name,
    description,
    config,
    service: { ...nullable({ type: 'string' }), readOnly: true },
    actions: {
      type: 'array',
      readOnly: true,
      items: { type: 'object', required: ['name', 'type'], properties: { name: { type: 'string' }, type: { type: 'string' }, conf: { type: 'object' } } },
    },
  },
  ['name', 'description', 'config', 'service', 'actions'],
);

export const appSchema = resource(
  'app',
  'An application. It connects to /v3/wss/{id} with its device token.',
  { name, description, config, token: tokenInfoSchema },
  ['name', 'description', 'config', 'token'],
);

export const hardwareLogSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'hardwareId', 'type', 'content', 'createdAt'],
  properties: { id: readOnlyId, hardwareId: { type: 'string', format: 'uuid' }, type: { type: 'string' }, content: { type: 'string' }, createdAt: dateTime },
};

export const issuedDeviceTokenSchema: JsonSchema = {
  type: 'object',
  required: ['token', 'prefix', 'issuedAt', 'kind', 'id'],
  properties: {
    token: { type: 'string', description: 'The device token (tdv_...), shown this once. Only its SHA-256 digest is stored.' },
    prefix: { type: 'string' },
    issuedAt: dateTime,
    kind: { enum: ['hardware', 'application'] },
    id: { type: 'string', format: 'uuid', description: 'The device or application id; connect to /v3/wss/{id}.' },
  },
};

export const pageOf = (items: JsonSchema): JsonSchema => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});

export const pointerResultSchema: JsonSchema = {
  type: 'object',
  required: ['type', 'pointer', 'value'],
  properties: { type: { type: 'string' }, pointer: { type: 'string' }, value: { description: 'The part of the schema the pointer names.' } },
};

/** Responses of generic list operations: any one resource type. */
export const anyResourcePage: JsonSchema = pageOf({ type: 'object' });
