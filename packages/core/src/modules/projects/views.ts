import type { Project } from './entities/project.entity.js';
import type { FileTreeNode, ProjectView, ProjectSummaryView } from './schemas.js';
import type { ProjectPermission } from './services/project.service.js';

export const toProjectView = (project: Project, filesFolder: FileTreeNode[], permissions: Iterable<ProjectPermission>): ProjectView => ({
  ...toProjectSummary(project, permissions),
  filesFolder,
});

/** A project in a list (no file tree). */
export const toProjectSummary = (project: Project, permissions: Iterable<ProjectPermission>): ProjectSummaryView => ({
  id: project.id,
  name: project.name,
  description: project.description,
  template: project.template,
  tools: project.tools,
  access: project.access,
  ownerId: project.owner.id,
  teamId: project.team.id,
  permissions: [...permissions],
  createdAt: project.createdAt.toISOString(),
  updatedAt: project.updatedAt.toISOString(),
});
