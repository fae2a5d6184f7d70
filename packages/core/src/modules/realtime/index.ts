export { realtimeModule } from './realtime.module.js';
export { realtimeConfigSchema, type RealtimeConfig } from './realtime.config.js';
export { PushService } from './push.service.js';
export {
  channelTargetResolverServiceIdentifier,
  hardwareMessageSinkServiceIdentifier,
  type ChannelTarget,
  type ChannelTargetResolver,
  type HardwareMessage,
  type HardwareMessageSink,
  type HardwareSensorParams,
  type HardwareStatusParams,
} from './channel-targets.js';
export { pushTopic, channelKinds, type ChannelKind, type PushEnvelope } from './topics.js';
export { realtimeCloseCodes, RealtimeSession, type RealtimeSessionInfo } from './session/realtime-session.js';
export { rpcCodes as realtimeRpcCodes } from './session/json-rpc.js';
export { RealtimeGateway } from './services/realtime-gateway.js';
export { PushHub } from './services/push-hub.js';
export { ConnectionRegistry } from './services/connection-registry.js';
