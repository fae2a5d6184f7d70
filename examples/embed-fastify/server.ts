/**
 * Trellis inside a Fastify 5 application: the API under /api, its WebSocket channels under /api
 * too, and the application's own routes next to it.
 *
 *   pnpm --filter @trellis-examples/embed-fastify start     (PORT, TRELLIS_DB, TRELLIS_JWT_SECRET)
 */
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
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
  app: FastifyInstance;
  close(): Promise<void>;
}

const prefix = '/api';

export async function startFastifyExample(options: ExampleOptions = {}): Promise<RunningExample> {
  const kernel = createKernel({
    database: sqliteDatabase({ path: options.database ?? './trellis.db' }),
    modules: coreModules,
    config: options.config,
  });
  await kernel.start();

  const app = Fastify();
  const trellis = toNodeHandler(kernel, { prefix });
  // onRequest runs before Fastify parses the body: Trellis takes its requests over from here
  // (hijack: Fastify does not answer them) and reads the body itself.
  app.addHook('onRequest', (request, reply, done) => {
    const path = request.raw.url ?? '/';
    if (path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`)) {
      reply.hijack();
      trellis(request.raw, reply.raw);
      return;
    }
    done();
  });
  app.get('/', async () => ({ app: 'fastify', api: prefix, docs: `${prefix}/docs` }));

  // The channels (`/v3/wss`, ...) answer under the same prefix: `/api/v3/wss`.
  const sockets = attachWebSockets(app.server, kernel, { prefix });
  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 3000, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 3000);

  return {
    url: `http://${host}:${port}`,
    kernel,
    app,
    async close() {
      // Fastify stops accepting and waits for its own requests; Trellis drains its own.
      const closed = app.close();
      await kernel.stop();
      await sockets.close();
      app.server.closeAllConnections();
      await closed;
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const running = await startFastifyExample({
    port: Number(process.env.PORT ?? 3000),
    database: process.env.TRELLIS_DB,
    config: process.env.TRELLIS_JWT_SECRET ? { auth: { jwtSecret: process.env.TRELLIS_JWT_SECRET } } : undefined,
  });
  console.log(`Fastify with Trellis on ${running.url} (API reference: ${running.url}/api/docs)`);
  const stop = () => void running.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
