import { ConfigError, coreModules, randomSecret, validateConfig, type Kernel, type ObjectNode, type Shape, type TrellisConfig, type TrellisConfigInput, type TrellisModule } from '@trellis/core';
import { AdapterNotInstalledError, adaptersModule, consoleModule, createHost, loadDatabaseFromUrl, secretsFileFor, type Host, type SecretsFileMode } from '@trellis/host';
import type { Logger } from 'pino';
import { createCliLogger } from './cli-logger.js';
import { CliError, loadConfigWithSources, sourceOfPath, type KernelFlags, type LoadedConfig } from './config-loader.js';
import { loadModules } from './modules-loader.js';
import { cliVersion } from './package-info.js';

/** A configuration that failed validation: every issue with its path and what set it. Exit code 2. */
export class CliConfigError extends CliError {
  constructor(
    readonly issues: ReadonlyArray<{ path: string; message: string; source?: string }>,
    origin?: string,
  ) {
    super(
      `Invalid configuration${origin ? ` (${origin})` : ''}:\n${issues
        .map((issue) => `  - ${issue.path}: ${issue.message}${issue.source ? ` [set by ${issue.source}]` : ''}`)
        .join('\n')}`,
      2,
    );
  }
}

export interface CliHostOptions {
  /** A one-shot command (not `start`): quieter logs and no warning about a generated JWT secret. */
  oneShot?: boolean;
  /** Changes applied to the loaded configuration before validation (for command-only flags). */
  override?: (config: TrellisConfigInput) => void;
  /** Default: the modules file (`--modules`, TRELLIS_MODULES, ./trellis.modules.mjs) or the built-in modules. */
  modules?: readonly TrellisModule[];
  /** Runs on the validated configuration before the host is composed (and before anything is logged). */
  precheck?: (config: TrellisConfig) => Promise<void>;
  /**
   * The secrets file beside a SQLite database (`database.secretsFile`): `persist` (default)
   * creates it on first use; `read` only reads it (commands that issue no tokens and open no secret).
   */
  secrets?: SecretsFileMode;
}

export interface CliHost {
  host: Host;
  /** The configuration as the user gave it, validated (`host.kernel.config` may add a throwaway JWT secret). */
  config: TrellisConfig;
  modules: readonly TrellisModule[];
  /** The modules file read, if any. */
  modulesFile?: string;
  loaded: LoadedConfig;
  log: Logger;
}

/**
 * Loads the configuration from the command's flags, validates it up front (so every problem is
 * reported with its path and source before anything connects), and composes a host.
 */
export async function createCliHost(flags: KernelFlags, options: CliHostOptions = {}): Promise<CliHost> {
  const loaded = await loadConfigWithSources(flags);
  const input = loaded.config;
  options.override?.(input);
  const found = options.modules ? { modules: options.modules, file: undefined } : await loadModules(flags.modules);
  const modules = found.modules;
  const config = validateCliConfig(loaded, modules);
  await options.precheck?.(config);

  // One-shot commands issue no JWTs: without a secrets file to read, a throwaway secret keeps the
  // kernel from warning about it (with one, the secrets are those `trellis start` uses).
  if (options.oneShot && !config.auth.jwtSecret && !secretsFileFor(input, config.database.url)) input.auth = { ...input.auth, jwtSecret: randomSecret() };
  // A one-shot command logs errors only (its result is on stdout), unless the user chose a level.
  const level = options.oneShot && input.log?.level === undefined ? 'error' : config.log.level;
  const log = createCliLogger(level);

  let database;
  try {
    // Imports the adapter package the URL names (@trellis/db-sqlite or @trellis/db-postgres).
    database = await loadDatabaseFromUrl(config.database.url);
  } catch (error) {
    if (error instanceof AdapterNotInstalledError) throw new CliError(error.message, 2);
    throw new CliError(`database.url: ${(error as Error).message}`, 2);
  }
  let host: Host;
  try {
    host = createHost({ config: input, database, modules, logger: log, version: cliVersion(), secrets: options.secrets });
  } catch (error) {
    // An unreadable secrets file, or one that cannot be written (a read-only folder).
    if ((error as NodeJS.ErrnoException).code || /secrets file/.test((error as Error).message)) throw new CliError(`database.secretsFile: ${(error as Error).message}`, 2);
    throw error;
  }
  try {
    // The adapter packages the `adapters` section names, imported and bound before any command runs.
    await host.load();
  } catch (error) {
    if (error instanceof AdapterNotInstalledError) throw new CliError(error.message, 2);
    throw error;
  }
  return { host, config, loaded, log, modules, modulesFile: found.file };
}

/** Validates a loaded configuration against the kernel schema plus every module's section. */
export function validateCliConfig(loaded: LoadedConfig, modules: readonly TrellisModule[] = coreModules): TrellisConfig {
  const sections: Record<string, ObjectNode<Shape>> = {};
  for (const module of [...modules, adaptersModule, consoleModule]) if (module.config) sections[module.name] = module.config;
  try {
    return validateConfig(loaded.config, sections);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new CliConfigError(
        error.issues.map((issue) => ({ ...issue, source: sourceOfPath(loaded, issue.path) })),
        loaded.file ? `file ${loaded.file}` : undefined,
      );
    }
    throw error;
  }
}

/**
 * Boots a kernel from the command's flags without listening, runs `work`, and stops it. For
 * commands such as `user create` or `billing confirm-order`. Migrations are applied when
 * `migrate` is true, skipped when false, and follow `database.migrateOnStart` when unset.
 * With `start: false` the kernel is not started (for `migrate`, which connects by itself).
 */
export async function withKernel<T>(
  flags: KernelFlags,
  work: (kernel: Kernel) => Promise<T>,
  options: { migrate?: boolean; start?: boolean } = {},
): Promise<T> {
  const { host, log } = await createCliHost(flags, { oneShot: true });
  try {
    if (options.start ?? true) await withDatabaseContext(host, () => host.kernel.start({ migrate: options.migrate, jobs: false }));
    return await work(host.kernel);
  } finally {
    await stopQuietly(host.kernel, log);
  }
}

/**
 * Stops a kernel that a one-shot command started or connected, without letting a failure to stop
 * hide the command's own result or error (a module's onStop may expect a started kernel).
 */
export async function stopQuietly(kernel: Kernel, log: Logger): Promise<void> {
  try {
    await kernel.stop();
  } catch (error) {
    log.warn({ err: error }, 'the kernel did not stop cleanly');
  }
}

const connectionErrorCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET', '28P01', '28000', '3D000', 'SQLITE_CANTOPEN']);

/** Runs `step`, turning a failure to reach the database into a clear CliError naming it. */
export async function withDatabaseContext<T>(host: Host, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (isConnectionError(error)) {
      throw new CliError(`Cannot connect to the database ${host.kernel.database.description}: ${(error as Error).message}`);
    }
    throw error;
  }
}

export function isConnectionError(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && connectionErrorCodes.has(e.code)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isConnectionError(inner))) return true;
  }
  return false;
}
