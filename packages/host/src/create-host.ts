import { createRequire } from 'node:module';
import { coreModules, createKernel, type AdapterBinding, type DatabaseAdapter, type Kernel, type TrellisConfigInput, type TrellisModule } from '@trellis/core';
import type { Logger } from 'pino';
import { adaptersFromConfig } from './adapters-module.js';
import { databaseFromUrl } from './database-from-url.js';
import { pickTransport } from './pick-transport.js';
import type { Transport, TransportName } from './transport.js';

export interface HostOptions {
  /** Raw configuration (validated by the kernel). */
  config?: TrellisConfigInput;
  /** Overrides `config.database.url`. */
  database?: DatabaseAdapter;
  adapters?: readonly AdapterBinding[];
  /** Default: every built-in module. */
  modules?: readonly TrellisModule[];
  logger?: Logger;
  /** Version shown in the OpenAPI document; default: this package's version. */
  version?: string;
}

const hostVersion = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

export interface Host {
  readonly kernel: Kernel;
  /** The transport actually in use (`uws` falls back to `node` when the binary cannot load). */
  readonly transport: TransportName;
  /** `http://host:port` plus the base path, once started. */
  readonly url: string;
  readonly port: number;
  /** Starts the kernel (migrations, jobs) and listens. */
  start(): Promise<void>;
  /** Graceful stop: refuse new connections, drain in-flight requests, close sockets, stop the kernel. */
  stop(): Promise<void>;
}

/** Composes a kernel, its database and a transport from configuration: the reference host. */
export function createHost(options: HostOptions = {}): Host {
  const database = options.database ?? databaseFromUrl(options.config?.database?.url ?? 'sqlite:./trellis.db');
  // Adapters named in the `adapters` section first; adapters passed in code win over them.
  const configured = adaptersFromConfig(options.config?.['adapters'], database.dialect);
  const kernel = createKernel({
    config: options.config,
    database,
    adapters: [...configured.bindings, ...(options.adapters ?? [])],
    modules: [...(options.modules ?? coreModules), configured.module],
    logger: options.logger,
    version: options.version ?? hostVersion,
  });
  let transport: Transport | undefined;
  let port = 0;
  let stopping: Promise<void> | undefined;

  const host: Host = {
    kernel,
    get transport() {
      return transport?.name ?? kernel.config.server.transport;
    },
    get port() {
      return port;
    },
    get url() {
      const { host: bind, basePath } = kernel.config.server;
      const shown = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
      return `http://${shown}:${port}${basePath}`;
    },
    async start() {
      await kernel.start();
      try {
        transport = await pickTransport(kernel);
        port = await transport.listen(kernel.config.server.host, kernel.config.server.port);
        kernel.servedUrl = host.url;
      } catch (error) {
        await kernel.stop();
        throw error;
      }
      kernel.log.info({ url: host.url, transport: transport.name, database: database.description }, 'trellis is listening');
    },
    stop() {
      // New connections are refused at once; requests and streams in flight finish (up to
      // server.shutdownTimeoutMs) before the kernel stops jobs and closes the database.
      stopping ??= (async () => {
        await transport?.stopAccepting();
        try {
          await kernel.stop();
        } finally {
          await transport?.close();
        }
      })();
      return stopping;
    },
  };
  return host;
}
