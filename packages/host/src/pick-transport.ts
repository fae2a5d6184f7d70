import type { Kernel } from '@trellis/core';
import { createNodeTransport } from './node-transport.js';
import type { Transport } from './transport.js';
import { loadUwsTransport, type UwsLoadResult } from './uws-loader.js';

/**
 * The transport the configuration asks for. `uws` (the default) falls back to `node:http` with
 * one warning when the uWebSockets.js binary cannot load on this platform.
 */
export async function pickTransport(kernel: Kernel, loadUws: () => Promise<UwsLoadResult> = loadUwsTransport): Promise<Transport> {
  if (kernel.config.server.transport === 'node') return createNodeTransport(kernel);
  const uws = await loadUws();
  if (uws.ok) return uws.create(kernel);
  kernel.log.warn(
    { reason: uws.reason },
    'uWebSockets.js could not be loaded on this platform; falling back to the node:http transport (set server.transport to "node" to silence this).',
  );
  return createNodeTransport(kernel);
}
