import { createServer, type Server } from 'node:http';
import type { Kernel } from '@trellis/core';
import { Admission } from './admission.js';
import { toNodeHandler } from './node-handler.js';
import { attachWebSockets, type AttachedWebSockets } from './node-websockets.js';
import type { Transport } from './transport.js';

/** The `node:http` + `ws` transport: the fallback where uWebSockets.js cannot load. */
export function createNodeTransport(kernel: Kernel): Transport {
  const admission = new Admission(kernel);
  const handler = toNodeHandler(kernel, { admission });
  let stopping = false;
  const server: Server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    // Once the host stops accepting, every response closes its connection.
    if (stopping) res.shouldKeepAlive = false;
    handler(req, res);
  });
  let sockets: AttachedWebSockets | undefined;
  let closed: Promise<void> | undefined;
  const closeServer = () => (closed ??= new Promise<void>((resolve) => server.close(() => resolve())));
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
      stopping = true;
      void closeServer();
      server.closeIdleConnections();
      return Promise.resolve();
    },
    async close() {
      stopping = true;
      admission.close();
      await sockets?.close();
      const done = closeServer();
      server.closeAllConnections();
      await done;
    },
  };
}
