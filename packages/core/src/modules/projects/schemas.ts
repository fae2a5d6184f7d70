/** The project responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import { projectAccessLevels } from './entities/project.entity.js';

const fileTreeNodeFields = Type.Object({
  key: Type.String({ description: 'Document id for files; a generated id for folders.' }),
  label: Type.String(),
  type: stringEnum(['file', 'folder']),
  docType: Type.String({ description: '`document` for documents, `folder` for folders.' }),
  isLeaf: Type.Boolean(),
});

/** A node of the file tree as answered (`filesFolder`). */
export type FileTreeNode = Static<typeof fileTreeNodeFields> & { children?: FileTreeNode[] };

export const fileTreeNodeSchema = Type.Object({
  ...fileTreeNodeFields.properties,
  // Nested nodes are published as plain objects (TypeBox's recursive type would publish `$id`/`$ref`).
  children: Type.Optional(Type.Array(Type.Unsafe<FileTreeNode>({ type: 'object', description: 'File-tree nodes (folders only).' }))),
});

const projectProperties = {
  id: uuid(),
  name: Type.String(),
  description: Type.String(),
  template: nullable(Type.String()),
  tools: Type.Array(Type.String()),
  access: stringEnum(projectAccessLevels),
  ownerId: uuid(),
  teamId: uuid(),
  permissions: Type.Array(stringEnum(['read', 'write', 'execute']), { description: "The caller's permissions." }),
  filesFolder: Type.Array(fileTreeNodeSchema, { description: 'The file tree: folders and documents.' }),
  createdAt: dateTime(),
  updatedAt: dateTime(),
};

export const projectSchema = Type.Object(projectProperties);
export type ProjectView = Static<typeof projectSchema>;

const { filesFolder: _tree, ...summaryProperties } = projectProperties;
/** A project in a list: the project without its file tree. */
export const projectSummarySchema = Type.Object(summaryProperties);
export type ProjectSummaryView = Static<typeof projectSummarySchema>;

export const projectPageSchema = pageSchema(projectSummarySchema);

export const projectDeletedSchema = Type.Object({ id: uuid(), deleted: Type.Literal(true) });
