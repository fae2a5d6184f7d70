import { EntitySchema } from '@mikro-orm/core';
import { Project } from './project.entity.js';

export type ProjectNodeType = 'file' | 'folder';

/**
 * One node of a project's file tree (`filesFolder`): a folder, or a file that stands for a
 * document (its key is the document id). Siblings are ordered by `position`.
 */
export class ProjectNode {
  key!: string;
  project!: Project;
  parentKey!: string | null;
  label!: string;
  type!: ProjectNodeType;
  /** What the file holds (`document` for documents); `folder` for folders. */
  docType!: string;
  position!: number;
  createdAt!: Date;
}

export const ProjectNodeSchema = new EntitySchema<ProjectNode>({
  class: ProjectNode,
  tableName: 'project_nodes',
  indexes: [{ properties: ['project', 'parentKey'] }],
  properties: {
    key: { type: 'string', length: 64, primary: true },
    project: { kind: 'm:1', entity: () => Project, deleteRule: 'cascade' },
    parentKey: { type: 'string', length: 64, nullable: true },
    label: { type: 'string', length: 500 },
    type: { type: 'string', length: 16 },
    docType: { type: 'string', length: 64 },
    position: { type: 'integer' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
