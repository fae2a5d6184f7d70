import type { ModuleContext } from '../../kernel/module.js';
import { defineChannel, type ChannelDefinition } from '../../kernel/ws/channel.js';
import type { RealtimeConfig } from './realtime.config.js';
import { RealtimeGateway } from './services/realtime-gateway.js';

/** The spec's WebSocket endpoints: `/v3/wss` (user) and `/v3/wss/{id}` (application or hardware). */
export function realtimeChannels(ctx: ModuleContext): readonly ChannelDefinition[] {
  const section = ctx.section as RealtimeConfig;
  return [
    defineChannel({
      name: 'realtime.user',
      path: '/v3/wss',
      maxPayloadBytes: section.maxMessageBytes,
      accept: (request, context) => context.get(RealtimeGateway).acceptUser(request),
    }),
    defineChannel({
      name: 'realtime.target',
      path: '/v3/wss/:id',
      maxPayloadBytes: section.maxMessageBytes,
      accept: (request, context) => context.get(RealtimeGateway).acceptTarget(request),
    }),
  ];
}
