/**
 * The developer resources as the API returns them, declared once (TypeBox): the JSON Schemas
 * (draft 2020-12) that document the responses in the OpenAPI document and that `GET /dev/schema?type=`
 * answers (with `$schema` and `$id` added), and the types the mappers build.
 */
import { dateTime, jsonObject, nullable, stringEnum, Type, uuid, type Static, type TSchema } from '../../kernel/http/response-schema.js';

/** A JSON Schema document (what `GET /{area}/schema` answers). */
export type JsonSchema = Record<string, unknown>;

const config = () => jsonObject({ additionalProperties: true, description: 'Free-form settings.' });
const description = () => nullable(Type.String({ maxLength: 10_000 }), { description: 'Free text.' });
const name = () => Type.String({ minLength: 1, maxLength: 200 });

/** A developer resource: its own fields between `id`/`ownerId` and the timestamps, nothing else. */
const resource = <P extends Record<string, TSchema>>(title: string, text: string, properties: P) =>
  Type.Object(
    {
      id: uuid({ readOnly: true }),
      ownerId: uuid({ readOnly: true, description: 'The developer who owns it.' }),
      ...properties,
      createdAt: dateTime({ readOnly: true }),
      updatedAt: dateTime({ readOnly: true }),
    },
    { title, description: text, additionalProperties: false },
  );

export const tokenInfoSchema = nullable(
  Type.Object({ prefix: Type.String({ description: 'First characters of the token, to recognise it.' }), issuedAt: dateTime() }),
  { readOnly: true, description: 'The device token currently issued (never the token itself), or null.' },
);

export const hardwareSchema = resource('hardware', 'A hardware device. It connects to /v3/wss/{id} with its device token.', {
  name: name(),
  description: description(),
  config: config(),
  status: stringEnum(['pending', 'active', 'resetting'], {
    readOnly: true,
    description: 'pending until the device first reports; resetting after a reset until it reports again.',
  }),
  lastSeenAt: nullable(dateTime(), { readOnly: true }),
  sim: Type.Object(
    {
      reported: nullable(jsonObject(), { description: 'SIM information the device last reported.' }),
      reportedAt: nullable(dateTime()),
      synced: nullable(jsonObject(), { description: 'SIM information adopted by the last sync_sim.' }),
      syncedAt: nullable(dateTime()),
    },
    { readOnly: true },
  ),
  token: tokenInfoSchema,
});
export type HardwareView = Static<typeof hardwareSchema>;

export const modelSchema = resource('model', 'An AI model configuration (the AI area\'s model: description is its desc, config its conf).', {
  name: name(),
  type: Type.String({ minLength: 1, maxLength: 64 }),
  description: description(),
  config: config(),
  service: nullable(Type.String(), { readOnly: true, description: 'AI provider serving the model (set through the AI area).' }),
});
export type DevModelView = Static<typeof modelSchema>;

export const botSchema = resource('bot', 'A bot (the bots area\'s bot: description is conf.desc, config is conf).', {
  name: name(),
  description: description(),
  config: config(),
});
export type DevBotView = Static<typeof botSchema>;

export const convSchema = resource(
  'conv',
  'A conversation (the conversations area\'s conversation: title is conf.title and name, description is conf.description, config is conf).',
  {
    title: name(),
    description: description(),
    config: config(),
    botId: nullable(uuid(), { readOnly: true }),
    members: Type.Array(Type.String(), { readOnly: true }),
  },
);
export type DevConvView = Static<typeof convSchema>;

export const taskSchema = resource('task', 'A task definition.', { name: name(), description: description(), config: config() });
export type TaskView = Static<typeof taskSchema>;

export const toolSchema = resource('tool', 'An AI tool (the AI area\'s tool: description is its desc, config its conf).', {
  name: name(),
  description: description(),
  config: config(),
  service: nullable(Type.String(), { readOnly: true }),
  actions: Type.Array(Type.Object({ name: Type.String(), type: Type.String(), conf: Type.Optional(jsonObject()) }), { readOnly: true }),
});
export type DevToolView = Static<typeof toolSchema>;

export const appSchema = resource('app', 'An application. It connects to /v3/wss/{id} with its device token.', {
  name: name(),
  description: description(),
  config: config(),
  token: tokenInfoSchema,
});
export type ApplicationView = Static<typeof appSchema>;

export const hardwareLogSchema = Type.Object({
  id: uuid({ readOnly: true }),
  hardwareId: uuid(),
  type: Type.String(),
  content: Type.String(),
  createdAt: dateTime(),
});
export type HardwareLogView = Static<typeof hardwareLogSchema>;

export const issuedDeviceTokenSchema = Type.Object({
  token: Type.String({ description: 'The device token (tdv_...), shown this once. Only its SHA-256 digest is stored.' }),
  prefix: Type.String(),
  issuedAt: dateTime(),
  kind: stringEnum(['hardware', 'application']),
  id: uuid({ description: 'The device or application id; connect to /v3/wss/{id}.' }),
});

export const pointerResultSchema = Type.Object({
  type: Type.String(),
  pointer: Type.String(),
  value: Type.Unknown({ description: 'The part of the schema the pointer names.' }),
});

/** What `GET /{area}/schema` answers: a JSON Schema document. */
export const schemaDocumentSchema = jsonObject({ description: 'A JSON Schema (draft 2020-12).' });
