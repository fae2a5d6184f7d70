import { ContainerModule } from 'inversify';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { defineModule } from '../../kernel/module.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import { Document, DocumentService } from '../documents/index.js';
import { documentScopes } from '../projects/index.js';
import { BlockVersionSchema } from './entities/block-version.entity.js';
import { BlockSchema } from './entities/block.entity.js';
import { migrations } from './migrations/index.js';
import { blockProjectRoutes } from './project-routes.js';
import { blockRoutes } from './routes.js';
import { BlockService } from './services/block.service.js';
import { DeploymentService } from './services/deployment.service.js';

/**
 * Blocks: workflow pages of a project (documents with `docType` `block`) with a name, description
 * and type, a trash, duplication, and deployments (immutable versions, access, install into other
 * projects). Also the Project API endpoints about blocks. Running blocks is the runs module's: it
 * resolves what to run through `BlockService.resolvePageRun` and `DeploymentService.resolveApiRun`.
 */
export const blocksModule = defineModule({
  name: 'blocks',
  dependsOn: ['identity', 'projects', 'documents'],
  entities: [BlockSchema, BlockVersionSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(BlockService).toSelf();
      bind(DeploymentService).toSelf();
    }),
  routes: scopeRoutes([...blockRoutes, ...blockProjectRoutes], documentScopes),
  onStart(ctx) {
    // A deleted project takes its documents along: end the collaborative sessions on them first.
    ctx.hooks.on('project.deleting', async ({ projectId }) => {
      const gate = ctx.get(DocumentService).gate;
      if (!gate) return;
      const docs = await ctx.get(kernelServiceIdentifier).fork().find(Document, { project: projectId, deletedAt: null }, { fields: ['id'] } as never);
      for (const doc of docs) if (gate.isLive(doc.id)) await gate.closeDocument(doc.id);
    });
  },
});
