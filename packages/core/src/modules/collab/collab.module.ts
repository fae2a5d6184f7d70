import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { collaborationGateServiceIdentifier } from '../documents/index.js';
import { collabChannel } from './collab.channel.js';
import { collabConfigSchema, type CollabConfig } from './collab.config.js';
import { DocumentCollabLeaseSchema } from './entities/document-collab-lease.entity.js';
import { DocumentYjsStateSchema } from './entities/document-yjs-state.entity.js';
import { migrations } from './migrations/index.js';
import { collabRoutes } from './routes.js';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { documentScopes } from '../projects/index.js';
import { CollabService } from './services/collab.service.js';
import { SmartEditService } from './services/smart-edit.service.js';
import { YjsStateService } from './services/yjs-state.service.js';
import { CollabLeaseStore } from './services/collab-lease.store.js';
import { YjsStateStore } from './services/yjs-state.store.js';

/**
 * Collaborative editing: Yjs over WebSocket (y-websocket protocol) at /v3/collab/{documentId},
 * awareness, the persisted yjs-state, smart-edit routing, and collab join/leave/edit. Yjs updates
 * and awareness cross host processes through the PubSub port.
 */
export const collabModule = defineModule({
  name: 'collab',
  dependsOn: ['identity', 'projects', 'documents'],
  config: collabConfigSchema,
  entities: [DocumentYjsStateSchema, DocumentCollabLeaseSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(YjsStateStore).toSelf();
      bind(CollabLeaseStore).toSelf();
      bind(CollabService).toSelf();
      bind(collaborationGateServiceIdentifier).toService(CollabService);
      bind(SmartEditService).toSelf();
      bind(YjsStateService).toSelf();
    }),
  routes: (ctx) => scopeRoutes(collabRoutes(ctx), documentScopes),
  channels: (ctx) => [collabChannel(ctx.section as CollabConfig)],
  async onStop(ctx) {
    await ctx.get(CollabService).closeAll();
  },
});
