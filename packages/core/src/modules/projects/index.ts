export { projectsModule } from './projects.module.js';
export { Project, ProjectSchema, projectAccessLevels, type ProjectAccessLevel } from './entities/project.entity.js';
export { ProjectNode, ProjectNodeSchema, type ProjectNodeType } from './entities/project-node.entity.js';
export { ProjectService, toTreeNode, type AddNodeInput, type CreateProjectInput, type FileTreeNode, type ProjectPermission } from './services/project.service.js';
export { toProjectView } from './views.js';
export type { ProjectView } from './schemas.js';
