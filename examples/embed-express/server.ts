/**
 * Trellis inside an Express 5 application: the API under /api, its WebSocket channels under
 * /api too, and the application's own routes next to it.
 *
 *   pnpm --filter @trellis-examples/embed-express start     (PORT, TRELLIS_DB, TRELLIS_JWT_SECRET)
 */
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { coreModules, createKernel, type Kernel, type TrellisConfigInput } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { attachWebSockets, toNodeHandler } from '@trellis/host';

export interface ExampleOptions {
  port?: number;
  host?: string;
  /** SQLite file, or `:memory:`. */
  database?: string;
  config?: TrellisConfigInput;
}

export interface RunningExample {
  /** `http://host:port` (the API is under `/api`). */
  url: string;
  kernel: Kernel;
  server: Server;
  close(): Promise<void>;
}

export async function startExpressExample(options: ExampleOptions = {}): Promise<RunningExample> {
  const kernel = createKernel({
    database: sqliteDatabase({ path: options.database ?? './trellis.db' }),
    modules: coreModules,
    config: options.config,
  });
  // Connects the database and applies pending migrations.
  await kernel.start();

  const app = express();
  // Express strips the mount path, so the handler needs no prefix. Mount Trellis before any body
  // parser: it reads and limits request bodies itself.
  app.use('/api', toNodeHandler(kernel));
  app.use(express.json());
  app.get('/', (_req, res) => {
    res.json({ app: 'express', api: '/api', docs: '/api/docs' });
  });

  const server = createServer(app);
  // The channels (`/v3/wss`, ...) answer under the same prefix: `/api/v3/wss`.
  const sockets = attachWebSockets(server, kernel, { prefix: '/api' });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 3000);

  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    kernel,
    server,
    async close() {
      // Refuse new connections, let requests in flight finish, then close what is left.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await kernel.stop();
      await sockets.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const running = await startExpressExample({
    port: Number(process.env.PORT ?? 3000),
    database: process.env.TRELLIS_DB,
    config: process.env.TRELLIS_JWT_SECRET ? { auth: { jwtSecret: process.env.TRELLIS_JWT_SECRET } } : undefined,
  });
  console.log(`Express with Trellis on ${running.url} (API reference: ${running.url}/api/docs)`);
  const stop = () => void running.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
