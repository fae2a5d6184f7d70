import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { ormServiceIdentifier } from '../../kernel/tokens.js';
import { TeamMember } from '../identity/index.js';
import { realtimeChannels } from './channels.js';
import { PushService } from './push.service.js';
import { realtimeConfigSchema, type RealtimeConfig } from './realtime.config.js';
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
  onStart({ hooks, get, section, log }) {
    const registry = get(ConnectionRegistry);
    const hub = get(PushHub);
    const { shutdownNotice } = section as RealtimeConfig;
    // Revoked credentials and changed users reach the sockets of every process through the
    // kernel's access-revoked signals (RealtimeSession.recheck).
    // A charge took a team's balance below billing.creditLowThreshold: its members hear it. A
    // failed push is logged, never thrown back at the charge (it is committed).
    hooks.on('billing.credits_low', async ({ teamId, totalCredits, threshold }) => {
      try {
        const members = await get(ormServiceIdentifier).em.fork().find(TeamMember, { team: teamId }, { fields: ['user'] });
        const push = get(PushService);
        for (const member of members) await push.toUser(member.user.id, 'system', { type: 'credit_low', content: { teamId, totalCredits, threshold } });
      } catch (error) {
        log.warn({ err: error, teamId }, 'realtime: could not push the credit_low notice');
      }
    });
    hooks.on('kernel.stopping', () => {
      // The users of this process's sockets hear why they are about to close (1001), first.
      if (shutdownNotice) hub.announce('user', 'system', { type: 'maintenance', content: shutdownNotice });
      hub.shutdown();
      registry.shutdown();
    });
  },
});
