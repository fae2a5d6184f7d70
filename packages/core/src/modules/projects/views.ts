import type { Project } from './entities/project.entity.js';
import type { FileTreeNode } from './services/project.service.js';

export interface ProjectView {
  id: string;
  name: string;
  description: string;
  template: string | null;
  tools: string[];
  access: string;
  ownerId: string;
  teamId: string;
  /** The caller's permissions in the project. */
  permissions: string[];
  filesFolder: FileTreeNode[];
  createdAt: string;
  updatedAt: string;
}

export const toProjectView = (project: Project, filesFolder: FileTreeNode[], permissions: Iterable<string>): ProjectView => ({
  id: project.id,
  name: project.name,
  description: project.description,
  template: project.template,
  tools: project.tools,
  access: project.access,
  ownerId: project.owner.id,
  teamId: project.team.id,
  permissions: [...permissions],
  filesFolder,
  createdAt: project.createdAt.toISOString(),
  updatedAt: project.updatedAt.toISOString(),
});

/** A project in a list (no file tree). */
export const toProjectSummary = (project: Project, permissions: Iterable<string>): Omit<ProjectView, 'filesFolder'> => {
  const { filesFolder: _tree, ...rest } = toProjectView(project, [], permissions);
  return rest;
};
