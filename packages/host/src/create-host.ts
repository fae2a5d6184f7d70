import { createRequire } from 'node:module';
import { coreModules, createKernel, type AdapterBinding, type DatabaseAdapter, type Kernel, type TrellisConfigInput, type TrellisModule } from '@trellis/core';
import type { Logger } from 'pino';
import { adaptersFromConfig } from './adapters-module.js';
import { consoleModule } from './console-module.js';
import { databaseFromUrl } from './database-from-url.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import { tracingFromConfig, type InstalledTracing } from './tracing.js';
import { pickTransport } from './pick-transport.js';
import { applySecretsFile, reportSecretsFile, type SecretsFileMode } from './secrets-file.js';
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
  /**
   * The secrets file (`database.secretsFile`, by default beside a SQLite file database) that
   * supplies `auth.jwtSecret` and `ai.encryption.key` when the configuration sets neither:
   * `persist` (default) creates it on first start, `read` only reads it.
   */
  secrets?: SecretsFileMode;
}

const hostVersion = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

export interface Host {
  readonly kernel: Kernel;
  /** The transport actually in use (`uws` falls back to `node` when the binary cannot load). */
  readonly transport: TransportName;
  /** `http://host:port` plus the base path, once started. */
  readonly url: string;
  readonly port: number;
  /** The separate metrics port when `metrics.port` is set, once started. */
  readonly metricsPort: number | undefined;
  /**
   * Imports the adapter packages the configuration names (the database driver, Redis, Stripe, ...)
   * and binds them; `start()` calls it first. Call it yourself before using `kernel` directly
   * (`kernel.start()`, `kernel.migrate`, `kernel.get(...)`). A missing package fails with
   * AdapterNotInstalledError naming it.
   */
  load(): Promise<void>;
  /** Loads the adapters, starts the kernel (migrations, jobs) and listens. */
  start(): Promise<void>;
  /** Graceful stop: refuse new connections, drain in-flight requests, close sockets, stop the kernel. */
  stop(): Promise<void>;
}

/** Composes a kernel, its database and a transport from configuration: the reference host. */
export function createHost(options: HostOptions = {}): Host {
  const database = options.database ?? databaseFromUrl(options.config?.database?.url ?? 'sqlite:./trellis.db');
  // Adapters named in the `adapters` section are imported by load(); adapters passed in code win over them.
  const configured = adaptersFromConfig(options.config?.['adapters'], database.dialect);
  // Generated secrets outlive the process: a restart keeps logins and stored AI model keys working.
  const secrets = applySecretsFile(options.config, options.secrets, database.description);
  const kernel = createKernel({
    config: secrets.config,
    database,
    adapters: options.adapters ?? [],
    modules: [...(options.modules ?? coreModules), configured.module, consoleModule],
    logger: options.logger,
    version: options.version ?? hostVersion,
  });
  reportSecretsFile(secrets, kernel.log);
  let transport: Transport | undefined;
  let port = 0;
  let stopping: Promise<void> | undefined;
  let metricsServer: MetricsServer | undefined;
  let tracing: InstalledTracing | undefined;
  let loading: Promise<void> | undefined;
  const inCode = new Set((options.adapters ?? []).map((binding) => binding.id));

  const host: Host = {
    kernel,
    get transport() {
      return transport?.name ?? kernel.config.server.transport;
    },
    get port() {
      return port;
    },
    get metricsPort() {
      return metricsServer?.port;
    },
    get url() {
      const { host: bind, basePath } = kernel.config.server;
      const shown = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
      return `http://${shown}:${port}${basePath}`;
    },
    load() {
      loading ??= (async () => {
        await database.prepare?.();
        for (const binding of await configured.load()) {
          if (inCode.has(binding.id)) continue;
          if (kernel.container.isBound(binding.id)) kernel.container.unbind(binding.id);
          kernel.container.bind(binding.id).toConstantValue(binding.value);
        }
      })().catch((error: unknown) => {
        loading = undefined; // a later call tries again (after the package is installed)
        throw error;
      });
      return loading;
    },
    async start() {
      await host.load();
      tracing ??= tracingFromConfig(kernel.config);
      await kernel.start();
      try {
        transport = await pickTransport(kernel);
        port = await transport.listen(kernel.config.server.host, kernel.config.server.port);
        kernel.servedUrl = host.url;
        const { enabled, port: scrapePort } = kernel.config.metrics;
        if (enabled && scrapePort !== undefined) metricsServer = await startMetricsServer(kernel, kernel.config.server.host, scrapePort);
      } catch (error) {
        await transport?.close();
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
          await metricsServer?.close();
          await tracing?.shutdown();
        }
      })();
      return stopping;
    },
  };
  return host;
}
