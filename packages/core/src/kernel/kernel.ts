import { MikroORM, type EntityManager, type IMigrator } from '@mikro-orm/core';
import { settledBy } from './settled-by.js';
import { Container, ContainerModule, type ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import { clockServiceIdentifier, SystemClock } from '../ports/clock.js';
import type { DatabaseAdapter, EntityDefinition, MigrationDefinition } from '../ports/database.js';
import { idsServiceIdentifier, UuidV7Ids } from '../ports/ids.js';
import { Argon2idPasswordHasher, passwordHasherServiceIdentifier } from '../ports/password-hasher.js';
import { InProcessPubSub, pubSubServiceIdentifier } from '../ports/pubsub.js';
import { InMemoryRateLimiter, rateLimiterServiceIdentifier } from '../ports/rate-limiter.js';
import { AccessRevocations, accessRevocationsServiceIdentifier } from './auth/access-revocation.js';
import { Authenticator, credentialVerifierServiceIdentifier } from './auth/authenticator.js';
import { validateConfig, type TrellisConfig, type TrellisConfigInput } from './config/config.js';
import type { ObjectNode, Shape } from './config/schema.js';
import { randomSecret } from './crypto.js';
import { Hooks } from './hooks.js';
import { HttpDispatcher } from './http/dispatcher.js';
import { buildOpenApi } from './http/openapi.js';
import type { RouteDefinition } from './http/route.js';
import { createLogger } from './logger.js';
import { registerDatabase } from './dialect.js';
import { mappedType } from './timestamp-type.js';
import { allowPrivateNetworksOf, NetworkGuard, networkGuardServiceIdentifier } from './net/network-guard.js';
import { executeStatement, observedStatements, preparedStatementsServiceIdentifier } from './prepared-statements.js';
import type { PreparedStatements } from '../ports/database.js';
import { countingPubSub, metricsRoutes, metricsServiceIdentifier, ObservingOrmLogger, observeJobRun, RequestObserver, TrellisMetrics } from './observability/index.js';
import type { JobDefinition, ModuleContext, RpcMethodDefinition, TrellisModule } from './module.js';
import {
  authenticatorServiceIdentifier,
  configServiceIdentifier,
  entityManagerServiceIdentifier,
  hooksServiceIdentifier,
  kernelServiceIdentifier,
  loggerServiceIdentifier,
  ormServiceIdentifier,
} from './tokens.js';
import type { ChannelDefinition } from './ws/channel.js';
import { WsDispatcher } from './ws/ws-dispatcher.js';

/** The least time each module's stop gets once the shutdown deadline has passed (see `stop`). */
const MODULE_STOP_MS = 2_000;

/** Binds an adapter instance to a port token, replacing the embedded default. */
export interface AdapterBinding<T = unknown> {
  id: ServiceIdentifier<T>;
  value: T;
}

export const provide = <T>(id: ServiceIdentifier<T>, value: T): AdapterBinding<T> => ({ id, value });

export interface KernelOptions {
  /** Raw configuration; validated (unknown keys rejected) and frozen. */
  config?: TrellisConfigInput;
  database: DatabaseAdapter;
  adapters?: readonly AdapterBinding[];
  /** The areas to load. Defaults to every built-in module. */
  modules: readonly TrellisModule[];
  logger?: Logger;
  /** Package version reported in the OpenAPI document. */
  version?: string;
}

export interface MigrationStatus {
  executed: string[];
  pending: string[];
}

export interface Kernel {
  readonly config: TrellisConfig;
  readonly log: Logger;
  readonly hooks: Hooks;
  readonly container: Container;
  readonly database: DatabaseAdapter;
  readonly modules: readonly TrellisModule[];
  readonly routes: readonly RouteDefinition[];
  readonly channels: readonly ChannelDefinition[];
  readonly rpcMethods: readonly RpcMethodDefinition[];
  /** Transport-free HTTP handling. */
  readonly http: HttpDispatcher;
  /** Transport-free WebSocket routing. */
  readonly ws: WsDispatcher;
  /** This kernel's Prometheus registry and metrics (also bound to `metricsServiceIdentifier`). */
  readonly metrics: TrellisMetrics;
  readonly ready: boolean;
  /** Connects the database, applies pending migrations (unless disabled) and starts modules and jobs. */
  start(options?: { migrate?: boolean; jobs?: boolean }): Promise<void>;
  /** Refuses new work, drains in-flight requests, closes sockets, stops jobs and the database. */
  stop(): Promise<void>;
  readonly migrate: {
    up(): Promise<string[]>;
    down(options?: { steps?: number }): Promise<string[]>;
    status(): Promise<MigrationStatus>;
  };
  get<T>(id: ServiceIdentifier<T>): T;
  /** A new unit of work. */
  fork(): EntityManager;
  /** Whether the database answers a trivial query. */
  ping(): Promise<boolean>;
  openapi(): Record<string, unknown>;
  /**
   * The URL the host serves on, set by the host once it listens (`undefined` before, and for a
   * kernel embedded without one). Values derived from the server's own address (the OAuth
   * issuer without `publicUrl`) use it, never a request's Host header.
   */
  servedUrl: string | undefined;
}

export function createKernel(options: KernelOptions): Kernel {
  const modules = orderModules(options.modules);
  const sections: Record<string, ObjectNode<Shape>> = {};
  for (const module of modules) if (module.config) sections[module.name] = module.config;

  const input = structuredClone(options.config ?? {}) as TrellisConfigInput;
  const generatedSecret = !input.auth?.jwtSecret;
  if (generatedSecret) input.auth = { ...input.auth, jwtSecret: randomSecret() };
  const config = validateConfig(input, sections);

  const log = options.logger ?? createLogger(config.log.level);
  if (generatedSecret) {
    log.warn(
      '⚠ auth.jwtSecret is not set: a random secret was generated for this process. Issued JWTs are rejected after a restart and differ between processes. Set auth.jwtSecret (or TRELLIS_JWT_SECRET) in production.',
    );
  }

  const hooks = new Hooks();
  const metrics = new TrellisMetrics({
    defaultMetrics: config.metrics.defaultMetrics,
    inFlight: () => kernel.http.activeRequests,
    databasePool: () => (orm ? options.database.poolStats?.(orm) : undefined),
  });
  const container = new Container({ defaultScope: 'Singleton' });
  let orm: MikroORM | undefined;
  let ready = false;
  /** Modules whose onStart ran, so stop only stops what started (also after a failed start). */
  const started: TrellisModule[] = [];
  let stopping: Promise<void> | undefined;
  const timers: NodeJS.Timeout[] = [];
  const jobsAbort = new AbortController();
  const runningJobs = new Set<Promise<void>>();

  const moduleContext = (module: TrellisModule): ModuleContext => ({
    config,
    section: (config as Record<string, unknown>)[module.name] ?? {},
    log: log.child({ module: module.name }),
    hooks,
  });

  container.bind(configServiceIdentifier).toConstantValue(config);
  container.bind(loggerServiceIdentifier).toConstantValue(log);
  container.bind(hooksServiceIdentifier).toConstantValue(hooks);
  container.bind(metricsServiceIdentifier).toConstantValue(metrics);
  container.onActivation(pubSubServiceIdentifier, (_context, pubsub) => countingPubSub(pubsub, metrics));
  container.bind(clockServiceIdentifier).toConstantValue(new SystemClock());
  container.bind(idsServiceIdentifier).toConstantValue(new UuidV7Ids());
  container.bind(pubSubServiceIdentifier).toConstantValue(new InProcessPubSub());
  // The embedded default; an adapter (`@trellis/ratelimit-redis`) bound by the host replaces it.
  container.bind(rateLimiterServiceIdentifier).toConstantValue(new InMemoryRateLimiter());
  container.bind(passwordHasherServiceIdentifier).toConstantValue(new Argon2idPasswordHasher());
  const network = allowPrivateNetworksOf(config);
  if (network.deprecated) log.warn('ai.tools.allowPrivateNetworks is deprecated: set network.allowPrivateNetworks (true, or the hosts, ports and CIDR ranges to let through; docs/network.md).');
  // Every outbound connection the server makes (AI models, embedders, tool actions) goes through it.
  container.bind(networkGuardServiceIdentifier).toConstantValue(new NetworkGuard({ allowPrivateNetworks: network.allow }));
  container.bind(ormServiceIdentifier).toDynamicValue(() => requireOrm());
  container.bind(entityManagerServiceIdentifier).toDynamicValue(() => requireOrm().em);
  let statements: PreparedStatements | undefined;
  // A constant facade: services resolve it at construction, before the database is connected.
  const preparedStatements: PreparedStatements = {
    dialect: options.database.dialect,
    all: (statement, params, em) => requireStatements().all(statement, params, em),
    first: (statement, params, em) => requireStatements().first(statement, params, em),
    run: (statement, params, em) => requireStatements().run(statement, params, em),
    execute: (statement, params = [], em) => executeStatement(requireStatements(), statement, params, em ?? requireOrm().em),
  };
  container.bind(preparedStatementsServiceIdentifier).toConstantValue(preparedStatements);
  container
    .bind(authenticatorServiceIdentifier)
    .toConstantValue(new Authenticator(() => container.getAll(credentialVerifierServiceIdentifier, { optional: true }) ?? [], config.auth.principalCacheTtlMs));
  const revocations = new AccessRevocations(
    () => container.get(pubSubServiceIdentifier),
    () => container.get(authenticatorServiceIdentifier),
    log.child({ module: 'access' }),
  );
  container.bind(accessRevocationsServiceIdentifier).toConstantValue(revocations);
  // Changes that may withdraw access reach the open sockets of every process.
  hooks.on('access.revoked', (signal) => revocations.revoke(signal));
  hooks.on('user.updated', ({ userId }) => revocations.revoke({ kind: 'user', userId }));
  hooks.on('credential.revoked', ({ credentialId }) => revocations.revoke({ kind: 'credentials', credentialIds: [credentialId] }));

  for (const module of modules) {
    if (module.container) container.load(module.container(moduleContext(module)));
  }
  for (const binding of options.adapters ?? []) {
    if (container.isBound(binding.id)) container.unbind(binding.id);
    container.bind(binding.id).toConstantValue(binding.value);
  }

  const routes = modules.flatMap((module) =>
    typeof module.routes === 'function' ? module.routes(moduleContext(module)) : (module.routes ?? []),
  );
  routes.push(...metricsRoutes(config));
  const channels = modules.flatMap((module) =>
    typeof module.channels === 'function' ? module.channels(moduleContext(module)) : (module.channels ?? []),
  );
  const rpcMethods = modules.flatMap((module) => module.rpcMethods ?? []);
  const jobs = modules.flatMap((module) => module.jobs ?? []);
  const entities: EntityDefinition[] = [...new Set(modules.flatMap((module) => module.entities ?? []))];
  const migrations: MigrationDefinition[] = modules.flatMap((module) => module.migrations ?? []);
  const skipTables = modules.flatMap((module) => module.schemaExtras?.tables ?? []);
  const migrationNames = new Set<string>();
  for (const migration of migrations) {
    if (migrationNames.has(migration.name)) throw new Error(`Two migrations share the name ${migration.name}.`);
    migrationNames.add(migration.name);
  }

  const get = <T>(id: ServiceIdentifier<T>): T => container.get(id);

  function requireStatements(): PreparedStatements {
    return (statements ??= observedStatements(options.database.statements(requireOrm()), metrics));
  }

  function requireOrm(): MikroORM {
    if (!orm) throw new Error('The database is not connected: call kernel.start() (or kernel.migrate.*) first.');
    return orm;
  }

  async function connect(): Promise<MikroORM> {
    if (orm) return orm;
    await options.database.prepare?.();
    if (orm) return orm;
    const adapterOptions = options.database.ormOptions(migrations);
    orm = await MikroORM.init({
      ...adapterOptions,
      entities,
      schemaGenerator: { ...adapterOptions.schemaGenerator, skipTables: [...(adapterOptions.schemaGenerator?.skipTables ?? []), ...skipTables] },
      // Dates compare as instants (see TimestampType): no phantom created_at/updated_at writes.
      discovery: { warnWhenNoEntities: false, getMappedType: mappedType },
      allowGlobalContext: false,
      forceUtcTimezone: true,
      // Statements without their bound values ('query-params' stays off): logs never hold user data.
      debug: config.database.debug ? ['query', 'schema', 'discovery', 'info'] : false,
      logger: (message: string) => log.debug({ orm: true }, message),
      loggerFactory: (loggerOptions) => new ObservingOrmLogger(loggerOptions, metrics, options.database.dialect),
    });
    registerDatabase(orm, options.database);
    await options.database.afterConnect?.(orm);
    return orm;
  }

  function migrator(): IMigrator {
    return requireOrm().getMigrator();
  }

  let openapiCache: Record<string, unknown> | undefined;
  const kernel: Kernel = {
    config,
    log,
    hooks,
    container,
    database: options.database,
    modules,
    routes,
    channels,
    rpcMethods,
    http: undefined as unknown as HttpDispatcher,
    ws: undefined as unknown as WsDispatcher,
    metrics,
    get ready() {
      return ready;
    },
    get,
    servedUrl: undefined,
    fork: () => requireOrm().em.fork(),
    async ping() {
      if (!orm) return false;
      try {
        await orm.em.getConnection().execute('select 1');
        return true;
      } catch {
        return false;
      }
    },
    openapi() {
      return (openapiCache ??= buildOpenApi(routes, {
        title: 'Trellis API',
        version: options.version ?? '0.0.0',
        description: 'Generated from the route table. Error codes are listed in the error catalogue (docs/errors.md).',
        // publicUrl carries the external prefix when a framework mounts Trellis under one.
        serverUrl: config.publicUrl ?? (config.server.basePath || '/'),
      }));
    },
    async start(startOptions = {}) {
      if (ready) return;
      await connect();
      let pending = new Set<string>();
      if (startOptions.migrate ?? config.database.migrateOnStart) {
        const applied = await kernel.migrate.up();
        if (applied.length) log.info({ migrations: applied }, 'applied pending migrations');
      } else {
        pending = new Set((await kernel.migrate.status()).pending);
        if (pending.size) log.warn({ pending: [...pending] }, 'database has pending migrations: run `trellis migrate up`');
      }
      await revocations.start();
      for (const module of modules) {
        // A module whose tables are not there yet cannot start work on them (consumers, re-encryption, ...).
        if (module.onStart && module.migrations?.some((migration) => pending.has(migration.name))) {
          log.warn({ module: module.name }, 'module not started: its migrations are pending');
          continue;
        }
        await module.onStart?.({ ...moduleContext(module), get });
        started.push(module);
      }
      if (startOptions.jobs ?? true) for (const job of jobs) schedule(job);
      ready = true;
      await hooks.emit('kernel.started', {});
    },
    stop() {
      stopping ??= (async () => {
        const wasReady = ready;
        ready = false;
        if (wasReady) await hooks.emit('kernel.stopping', {});
        // One deadline for the requests in flight and the jobs running: a stop never waits longer.
        const deadline = Date.now() + config.server.shutdownTimeoutMs;
        const drained = await kernel.http.drain(config.server.shutdownTimeoutMs);
        if (!drained) log.warn('shutdown timeout reached with requests still in flight; their streams were stopped');
        kernel.ws.closeAll();
        for (const timer of timers) clearInterval(timer);
        jobsAbort.abort();
        // A job that does not heed its signal (one waiting on a database that stopped answering)
        // is left behind rather than holding the stop.
        if (runningJobs.size > 0 && !(await settledBy(Promise.allSettled(runningJobs), deadline))) {
          log.warn({ jobs: runningJobs.size }, 'shutdown timeout reached with jobs still running; stopping without them');
        }
        // Each module's stop gets what is left of the deadline, at least MODULE_STOP_MS: one that
        // does not end by then (its own writes to a database that stopped answering) is left
        // behind, and the database's close below ends what it waits for.
        for (const module of started.splice(0).reverse()) {
          if (!module.onStop) continue;
          const stop = Promise.resolve()
            .then(() => module.onStop!({ ...moduleContext(module), get }))
            .catch((error: unknown) => log.error({ err: error, module: module.name }, 'a module failed to stop'));
          if (!(await settledBy(stop, Math.max(deadline, Date.now() + MODULE_STOP_MS)))) {
            log.warn({ module: module.name }, 'shutdown timeout reached: a module did not stop in time; stopping without it');
          }
        }
        await revocations.stop();
        await container.get(pubSubServiceIdentifier).close();
        await container.get(networkGuardServiceIdentifier).close().catch(() => undefined);
        if (orm) await orm.close(true);
        orm = undefined;
        statements = undefined;
      })();
      return stopping;
    },
    migrate: {
      async up() {
        await connect();
        const done = await migrator().up();
        return done.map((m) => m.name);
      },
      async down({ steps = 1 } = {}) {
        await connect();
        const done = await migrator().down({ step: steps } as never);
        return done.map((m) => m.name);
      },
      async status() {
        await connect();
        const executed = (await migrator().getExecutedMigrations()).map((m) => m.name);
        const pending = (await migrator().getPendingMigrations()).map((m) => m.name);
        return { executed, pending };
      },
    },
  };

  function schedule(job: JobDefinition): void {
    const interval = typeof job.intervalMs === 'function' ? job.intervalMs(config) : job.intervalMs;
    let running = false;
    const timer = setInterval(() => {
      if (running || jobsAbort.signal.aborted) return;
      running = true;
      const run = observeJobRun(metrics, job.name, () => job.run({ em: kernel.fork(), log: log.child({ job: job.name }), now: new Date(), signal: jobsAbort.signal, get }))
        .catch((error: unknown) => log.error({ err: error, job: job.name }, 'job failed'))
        .finally(() => {
          running = false;
          runningJobs.delete(run);
        });
      runningJobs.add(run);
    }, interval);
    timer.unref();
    timers.push(timer);
  }

  (kernel as { http: HttpDispatcher }).http = new HttpDispatcher({
    config,
    log,
    routes,
    authenticator: () => container.get(authenticatorServiceIdentifier),
    fork: () => kernel.fork(),
    get,
    isReady: () => ready,
    observer: new RequestObserver(log, config, metrics, config.server.basePath),
  });
  (kernel as { ws: WsDispatcher }).ws = new WsDispatcher(channels, config.server.basePath, log, get, () => ready, metrics);
  container.bind(kernelServiceIdentifier).toConstantValue(kernel);
  return kernel;
}

/** Orders modules so each comes after the ones it depends on; refuses unknown or circular dependencies. */
function orderModules(modules: readonly TrellisModule[]): TrellisModule[] {
  const byName = new Map(modules.map((m) => [m.name, m]));
  if (byName.size !== modules.length) throw new Error('Two modules share a name.');
  const out: TrellisModule[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (module: TrellisModule, chain: string[]) => {
    const seen = state.get(module.name);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new Error(`Circular module dependency: ${[...chain, module.name].join(' -> ')}`);
    state.set(module.name, 'visiting');
    for (const dep of module.dependsOn ?? []) {
      const target = byName.get(dep);
      if (!target) throw new Error(`Module "${module.name}" needs module "${dep}", which is not loaded.`);
      visit(target, [...chain, module.name]);
    }
    state.set(module.name, 'done');
    out.push(module);
  };
  for (const module of modules) visit(module, []);
  return out;
}

export { ContainerModule };
