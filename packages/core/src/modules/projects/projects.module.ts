import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { ProjectNodeSchema } from './entities/project-node.entity.js';
import { Project, ProjectSchema } from './entities/project.entity.js';
import { migrations } from './migrations/index.js';
import { projectRoutes } from './routes.js';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { documentScopes } from './scopes.js';
import { ProjectService } from './services/project.service.js';

/**
 * Projects: the container of documents, its file tree (`filesFolder`) and the access model
 * (owner, team members, public readers; read, write and execute permissions).
 */
export const projectsModule = defineModule({
  name: 'projects',
  dependsOn: ['identity'],
  entities: [ProjectSchema, ProjectNodeSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(ProjectService).toSelf();
    }),
  routes: scopeRoutes(projectRoutes, documentScopes),
  onStart({ hooks }) {
    // The team's projects (and, through their foreign keys, documents and file trees) go with it.
    hooks.on('team.deleting', async ({ teamId, em }) => {
      await em.nativeDelete(Project, { team: teamId });
    });
  },
});
