export { createTrellisClient, TrellisClient, type DeploymentRunInput, type TrellisClientOptions } from './client.js';
export { ConversationTurns, type ConversationEvent, type Turn, type TurnOptions } from './conversations.js';
export { TrellisApiError } from './errors.js';
export { resumableRunStream, type OpenRunStream, type ResumeOptions, type RunEvent } from './run-events.js';
export { RpcError, UserChannel, type Push, type UserChannelOptions, type WebSocketConstructor, type WebSocketLike } from './user-channel.js';
export type { components, operations, paths } from './generated/openapi.js';
