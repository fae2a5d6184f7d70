import { ContainerModule } from 'inversify';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { defineModule } from '../../kernel/module.js';
import { documentScopes } from '../projects/index.js';
import { documentsConfigSchema } from './documents.config.js';
import { DocumentUiStateSchema } from './entities/document-ui-state.entity.js';
import { DocumentVersionSchema } from './entities/document-version.entity.js';
import { DocumentSchema } from './entities/document.entity.js';
import { migrations } from './migrations/index.js';
import { documentRoutes } from './routes.js';
import { DocumentService } from './services/document.service.js';
import { UiStateService } from './services/ui-state.service.js';
import { VersionService } from './services/version.service.js';

/**
 * Documents: rich-text content with its FNV-1a content hash, markdown-ir, REST edits (whole
 * content or block commands) with optimistic concurrency, versions, UI preview state, soft delete
 * and duplication in the project file tree. Collaborative editing plugs in through the
 * `CollaborationGate` (the collab module).
 */
export const documentsModule = defineModule({
  name: 'documents',
  dependsOn: ['identity', 'projects'],
  config: documentsConfigSchema,
  entities: [DocumentSchema, DocumentVersionSchema, DocumentUiStateSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(DocumentService).toSelf();
      bind(VersionService).toSelf();
      bind(UiStateService).toSelf();
    }),
  routes: (ctx) => scopeRoutes(documentRoutes(ctx), documentScopes),
});
