export { createHost, type Host, type HostOptions } from './create-host.js';
export { databaseFromUrl } from './database-from-url.js';
export { toNodeHandler, type NodeHandler, type NodeHandlerOptions } from './node-handler.js';
export { attachWebSockets, type AttachWebSocketsOptions, type AttachedWebSockets } from './node-websockets.js';
export { createNodeTransport } from './node-transport.js';
export { pickTransport } from './pick-transport.js';
export { loadUwsTransport, type UwsLoadResult } from './uws-loader.js';
export type { Transport, TransportFactory, TransportName } from './transport.js';
export { adaptersConfigSchema, adaptersFromConfig, adaptersModule, referenceAiProviders, type AdaptersConfig, type ConfiguredAdapters } from './adapters-module.js';
