/** The document responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, jsonObject, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { DocumentContent } from './content/rich-text.js';

const content = () => Type.Unsafe<DocumentContent>({ type: 'object', description: 'Rich-text document JSON: { type: "doc", content: [nodes] }.' });
const contentHash = (options: { description?: string } = {}) => Type.String({ pattern: '^[0-9a-f]{8}$', ...options });

export const documentSchema = Type.Object({
  id: uuid(),
  project_id: uuid(),
  title: nullable(Type.String()),
  doc_type: Type.String(),
  content: content(),
  content_hash: contentHash({ description: 'FNV-1a 32 of the canonical JSON; the version.' }),
  content_source: stringEnum(['rest', 'collab'], { description: '`collab` while a collaborative session holds the document.' }),
  created_at: dateTime(),
  updated_at: dateTime(),
});
/** A document resource (snake_case, as the spec shows documents). */
export type DocumentView = Static<typeof documentSchema>;

export const contentResponseSchema = Type.Object({
  id: Type.Optional(uuid()),
  project_id: Type.Optional(uuid()),
  content: Type.Union([content(), Type.String({ description: 'markdown-ir text (format=markdown-ir)' })]),
  content_hash: contentHash(),
  content_source: Type.Optional(stringEnum(['rest', 'collab'])),
  title: nullable(Type.String()),
  format: Type.Optional(stringEnum(['json', 'markdown-ir'])),
  updated_at: dateTime(),
});

export const editResultSchema = Type.Object({
  success: Type.Literal(true),
  version: Type.String({ description: 'The new content_hash.' }),
  results: Type.Array(
    Type.Object({ op: Type.String(), success: Type.Boolean(), data: Type.Optional(Type.Unknown({ description: 'For list, read, read_range (and the id of an inserted block).' })) }),
  ),
});

export const successSchema = Type.Object({ success: Type.Literal(true) });

export const versionSchema = Type.Object({
  id: uuid(),
  document_id: uuid(),
  version: Type.String({ description: 'The content_hash of this version.' }),
  title: nullable(Type.String()),
  source: Type.String(),
  author: nullable(Type.Object({ id: Type.Optional(Type.String()), name: Type.Optional(Type.String()) })),
  author_kind: nullable(Type.String()),
  created_at: dateTime(),
  content: Type.Optional(content()),
});
export type VersionView = Static<typeof versionSchema>;

export const versionPageSchema = pageSchema(versionSchema);

export const uiStateSchema = Type.Object({
  document_id: uuid(),
  annotations: Type.Array(jsonObject()),
  pending_changes: nullable(
    Type.Object({
      changes: Type.Optional(Type.Array(Type.Unknown())),
      // Null when the changes were submitted without a summary.
      summary: Type.Optional(nullable(Type.String())),
      submitted_at: Type.Optional(dateTime()),
      submitted_by: Type.Optional(Type.String()),
    }),
  ),
  preview_state: Type.Object({ screen: Type.Optional(Type.String()), viewport: Type.Optional(jsonObject()), render_state: Type.Optional(jsonObject()) }),
  thumbnail: Type.Object({
    url: Type.Optional(Type.String()),
    data_url: Type.Optional(Type.String()),
    width: Type.Optional(Type.Integer()),
    height: Type.Optional(Type.Integer()),
    alt: Type.Optional(Type.String()),
  }),
  updated_at: nullable(dateTime()),
});
export type UiStateView = Static<typeof uiStateSchema>;

export const uiStateResultSchema = Type.Object({ success: Type.Literal(true), ui_state: uiStateSchema });

export const fileNodeResponseSchema = Type.Object({
  success: Type.Literal(true),
  node: jsonObject({ description: 'File-tree node: key, label, type, docType, isLeaf (and children for folders).' }),
});

export const rollbackResultSchema = Type.Object({ success: Type.Literal(true), version: Type.String(), version_id: Type.String() });

export const savedVersionSchema = Type.Object({ success: Type.Literal(true), version: Type.String() });

export const thumbnailResultSchema = Type.Object({ success: Type.Literal(true), thumbnail: jsonObject() });
