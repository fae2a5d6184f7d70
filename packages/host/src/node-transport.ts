import { createServer, type Server } from 'node:http';
import type { Kernel } from '@trellis/core';
import { toNodeHandler } from './node-handler.js';
import { attachWebSockets, type AttachedWebSockets } from './node-websockets.js';
import type { Transport } from './transport.js';

/** The `node:http` + `ws` transport: the fallback where uWebSockets.js cannot load. */
export function createNodeTransport(kernel: Kernel): Transport {
  const server: Server = createServer({ keepAliveTimeout: 5_000 }, toNodeHandler(kernel));
  let sockets: AttachedWebSockets | undefined;
  let closed: Promise<void> | undefined;
  return {
    name: 'node',
    listen(host, port) {
      sockets = attachWebSockets(server, kernel);
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          resolve(typeof address === 'object' && address ? address.port : port);
        });
      });
    },
    stopAccepting() {
      closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      return Promise.resolve();
    },
    async close() {
      await sockets?.close();
      server.closeAllConnections();
      await (closed ?? new Promise<void>((resolve) => server.close(() => resolve())));
    },
  };
}
