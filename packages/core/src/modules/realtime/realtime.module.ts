import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { realtimeChannels } from './channels.js';
import { PushService } from './push.service.js';
import { realtimeConfigSchema } from './realtime.config.js';
import { hardwareRpcMethods } from './rpc-methods.js';
import { ConnectionRegistry } from './services/connection-registry.js';
import { PushHub } from './services/push-hub.js';
import { RealtimeGateway } from './services/realtime-gateway.js';

/**
 * JSON-RPC 2.0 WebSocket channels (`/v3/wss` for users, `/v3/wss/{id}` for applications and
 * hardware devices), heartbeat, and the push API other modules use to reach connected clients
 * through the PubSub port. Other modules add JSON-RPC methods to these channels with their own
 * `rpcMethods` (channel names `user`, `application`, `hardware`).
 */
export const realtimeModule = defineModule({
  name: 'realtime',
  dependsOn: ['identity'],
  config: realtimeConfigSchema,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(PushService).toSelf();
      bind(PushHub).toSelf();
      bind(ConnectionRegistry).toSelf();
      bind(RealtimeGateway).toSelf();
    }),
  channels: realtimeChannels,
  rpcMethods: hardwareRpcMethods,
  onStart({ hooks, get }) {
    const registry = get(ConnectionRegistry);
    const hub = get(PushHub);
    // Revoked credentials and changed users reach the sockets of every process through the
    // kernel's access-revoked signals (RealtimeSession.recheck).
    hooks.on('kernel.stopping', () => {
      hub.shutdown();
      registry.shutdown();
    });
  },
});
