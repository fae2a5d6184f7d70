/** The tool service's responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, jsonObject, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';

const vdbRecordProperties = {
  id: uuid(),
  className: Type.String(),
  content: Type.String(),
  tags: Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  metadata: jsonObject({ additionalProperties: true }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
};

export const vdbRecordSchema = Type.Object(vdbRecordProperties);
export type VdbRecordView = Static<typeof vdbRecordSchema>;

export const vdbListSchema = Type.Object({
  items: Type.Array(vdbRecordSchema),
  total: Type.Integer({ description: 'Records that match `where`.' }),
  page: Type.Integer({ description: '1 + floor(skip / limit).' }),
  size: Type.Integer({ description: 'Same as limit.' }),
  skip: Type.Integer(),
  limit: Type.Integer(),
});

export const vdbSearchSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      ...vdbRecordProperties,
      score: Type.Number({ description: 'Cosine similarity to the query (1 is identical direction).' }),
      distance: Type.Number({ description: 'Cosine distance, 1 − score.' }),
    }),
    { description: 'Nearest first.' },
  ),
  total: Type.Integer({ description: 'Number of hits (limit, or fewer when fewer records match).' }),
  page: Type.Literal(1),
  size: Type.Integer({ description: 'The limit asked for.' }),
});

export const vdbBatchSchema = Type.Object({ items: Type.Array(vdbRecordSchema), total: Type.Integer() });

export const vdbDeletedSchema = Type.Object({ id: uuid(), deleted: Type.Literal(true) });

const addressField = Type.Object({
  value: Type.String({ description: 'Empty when not found.' }),
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
});

export const parsedAddressSchema = Type.Object({
  name: addressField,
  phone: Type.Object({ ...addressField.properties, kind: stringEnum(['mobile', 'landline', '']) }),
  province: addressField,
  city: addressField,
  district: addressField,
  detail: addressField,
  postalCode: Type.String(),
  regionCode: Type.String({ description: 'Division code (GB/T 2260) of the most specific level found.' }),
  candidates: Type.Array(
    Type.Object({ province: Type.String(), city: Type.String(), district: Type.String(), code: Type.String(), confidence: Type.Number() }),
    { description: 'Other readings of the region when it is ambiguous, best first; empty otherwise.' },
  ),
});

export const anonymousTokenSchema = Type.Object({
  access_token: Type.String({ description: 'Opaque, prefixed `tan_`; valid 1 hour. Send it as `Authorization: Bearer`.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds (3600).' }),
  refresh_token: Type.String({ description: 'Opaque, prefixed `tan_`; valid 30 days; single use (POST /tool/home/oauth/rtoken).' }),
  refresh_expires_in: Type.Integer({ description: 'Seconds (2592000).' }),
  user_id: uuid(),
  anonymous: Type.String({ description: 'The anonymous identifier.' }),
});
export type AnonymousTokenResponse = Static<typeof anonymousTokenSchema>;

export const speechSchema = Type.Object({
  audio: Type.String({ contentEncoding: 'base64', contentMediaType: 'audio/mpeg', description: 'The spoken message as base64 MP3 (Mandarin, standard female voice).' }),
  format: Type.Literal('mp3'),
  sampleRate: Type.Integer({ description: 'Hz.' }),
  duration: Type.Number({ description: 'Seconds of audio.' }),
  voice: Type.String({ description: 'The voice that spoke (eSpeak NG: `cmn+f3`, Mandarin, female).' }),
});
export type SpeechResult = Static<typeof speechSchema>;
