export { projectsModule } from './projects.module.js';
export { Project, ProjectSchema, projectAccessLevels, type ProjectAccessLevel } from './entities/project.entity.js';
export { ProjectNode, ProjectNodeSchema, type ProjectNodeType } from './entities/project-node.entity.js';
export { ProjectService, toTreeNode, type AddNodeInput, type CreateProjectInput, type FileTreeNode, type ProjectPermission, projectNotFound } from './services/project.service.js';
export { toProjectView } from './views.js';
export type { ProjectView } from './schemas.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { documentScopes } from './scopes.js';
