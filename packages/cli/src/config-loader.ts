import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TrellisConfigInput } from '@trellis/core';

/** Options every command that boots a kernel accepts (flags win over environment over file). */
export interface KernelFlags {
  config?: string;
  /** Modules file (see modules-loader.ts); not part of the configuration. */
  modules?: string;
  database?: string;
  port?: string | number;
  host?: string;
  transport?: string;
}

/** The file read from the working directory when neither `--config` nor TRELLIS_CONFIG is given. */
export const defaultConfigFile = 'trellis.config.json';

/** Environment variables with a short name, and the config path each one sets ('' for none). */
export const environmentVariables: ReadonlyArray<{ name: string; path: string; description: string }> = [
  { name: 'TRELLIS_CONFIG', path: '', description: `Configuration file (JSON, or a .js/.mjs module whose default export is the object). Default: ./${defaultConfigFile} when it exists.` },
  { name: 'TRELLIS_MODULES', path: '', description: 'Modules file: a .mjs module whose default export is the list of modules to load. Default: ./trellis.modules.mjs when it exists, else every built-in module.' },
  { name: 'TRELLIS_DATABASE', path: 'database.url', description: 'sqlite:<path>, sqlite::memory: or postgres://...' },
  { name: 'TRELLIS_PORT', path: 'server.port', description: 'TCP port (0 picks a free one).' },
  { name: 'TRELLIS_HOST', path: 'server.host', description: 'Interface to listen on.' },
  { name: 'TRELLIS_TRANSPORT', path: 'server.transport', description: 'uws or node.' },
  { name: 'TRELLIS_JWT_SECRET', path: 'auth.jwtSecret', description: 'HS256 secret for user JWTs (at least 32 characters).' },
  { name: 'TRELLIS_SECRETS_FILE', path: 'database.secretsFile', description: 'Where generated secrets are kept when auth.jwtSecret or ai.encryption.key is unset. Default: <SQLite file>.secrets.json.' },
  { name: 'TRELLIS_LOG_LEVEL', path: 'log.level', description: 'fatal, error, warn, info, debug, trace or silent.' },
  { name: 'TRELLIS_LOG_FORMAT', path: '', description: 'json or pretty: how the CLI writes logs to stderr. Default: pretty when stderr is a terminal, json otherwise.' },
  { name: 'TRELLIS_PUBLIC_URL', path: 'publicUrl', description: 'External base URL of the API.' },
  { name: 'TRELLIS_FRONTEND_URL', path: 'frontendUrl', description: 'Base URL of the web front end.' },
  { name: 'TRELLIS_REDIS_URL', path: 'adapters.redisUrl', description: 'Redis for several host processes (pub/sub and rate limits).' },
  { name: 'TRELLIS_PAYMENTS_PROVIDER', path: 'adapters.payments.provider', description: 'manual or stripe.' },
  { name: 'TRELLIS_STRIPE_SECRET_KEY', path: 'adapters.payments.stripe.secretKey', description: 'Stripe secret key.' },
  { name: 'TRELLIS_STRIPE_WEBHOOK_SECRET', path: 'adapters.payments.stripe.webhookSecret', description: 'Stripe webhook signing secret.' },
  { name: 'TRELLIS_DEBUG', path: '', description: 'Set to 1 to print the stack trace of an unexpected CLI error.' },
];

/** The raw configuration, the file it came from, and which flag or variable set each path. */
export interface LoadedConfig {
  config: TrellisConfigInput;
  /** Absolute path of the configuration file read, if any. */
  file?: string;
  /** Config path (`server.port`) to what set it: `--port`, `TRELLIS_PORT`, `TRELLIS__SERVER__PORT`. */
  sources: ReadonlyMap<string, string>;
}

/**
 * Builds the raw configuration: the file (`--config`, TRELLIS_CONFIG, or ./trellis.config.json
 * when it exists), then `TRELLIS__<PATH>` variables, then the short `TRELLIS_*` variables, then
 * flags. Any config path can be set as `TRELLIS__<PATH>` with `__` between segments
 * (`TRELLIS__SERVER__MAX_BODY_BYTES=2097152` sets `server.maxBodyBytes`); a value starting with
 * `{` or `[` is read as JSON. The kernel validates the result.
 */
export async function loadConfig(flags: KernelFlags, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<TrellisConfigInput> {
  return (await loadConfigWithSources(flags, env, cwd)).config;
}

export async function loadConfigWithSources(flags: KernelFlags, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<LoadedConfig> {
  const explicit = flags.config ?? env['TRELLIS_CONFIG'];
  const discovered = resolve(cwd, defaultConfigFile);
  const file = explicit ? resolve(cwd, explicit) : existsSync(discovered) ? discovered : undefined;
  const config: Record<string, unknown> = file ? await readConfigFile(file) : {};
  const sources = new Map<string, string>();
  const set = (path: string, value: unknown, source: string) => {
    setPath(config, path, value);
    sources.set(path, source);
  };

  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value === undefined || !name.startsWith('TRELLIS__')) continue;
    const path = pathForEnvName(name);
    if (path) set(path, parseEnvValue(value), name);
  }
  for (const variable of environmentVariables) {
    const value = env[variable.name];
    if (value !== undefined && variable.path) set(variable.path, value, variable.name);
  }
  if (flags.database !== undefined) set('database.url', flags.database, '--database');
  if (flags.port !== undefined) set('server.port', flags.port, '--port');
  if (flags.host !== undefined) set('server.host', flags.host, '--host');
  if (flags.transport !== undefined) set('server.transport', flags.transport, '--transport');
  return { config: config as TrellisConfigInput, file, sources };
}

/**
 * What set a config path, for error messages: the flag or variable that set it (or a parent),
 * else the configuration file, else undefined (a default).
 */
export function sourceOfPath(loaded: Pick<LoadedConfig, 'file' | 'sources'>, path: string, cwd = process.cwd()): string | undefined {
  const clean = path.replace(/\[\d+\]/g, '');
  for (let p = clean; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const source = loaded.sources.get(p);
    if (source) return source;
  }
  if (loaded.file) return relative(cwd, loaded.file) || loaded.file;
  return undefined;
}

/** `TRELLIS__SERVER__MAX_BODY_BYTES` → `server.maxBodyBytes`. */
export function pathForEnvName(name: string): string {
  return name.slice('TRELLIS__'.length).split('__').filter(Boolean).map(camel).join('.');
}

/** `server.maxBodyBytes` → `TRELLIS__SERVER__MAX_BODY_BYTES`. */
export function envNameForPath(path: string): string {
  return `TRELLIS__${path
    .split('.')
    .map((segment) => segment.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
    .join('__')}`;
}

function parseEnvValue(value: string): unknown {
  const trimmed = value.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return JSON.parse(trimmed);
    } catch {
      return value;
    }
  }
  return value;
}

async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    if (['.js', '.mjs', '.cjs'].includes(extname(path))) {
      const loaded = (await import(pathToFileURL(path).href)) as { default?: unknown };
      value = loaded.default;
    } else {
      value = JSON.parse(await readFile(path, 'utf8'));
    }
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the file does not exist' : (error as Error).message;
    throw new CliError(`Cannot read the configuration file ${path}: ${reason}`, 2);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(`The configuration file ${path} must hold an object.`, 2);
  }
  // A module's default export is shared by every import: work on a copy.
  try {
    return structuredClone(value) as Record<string, unknown>;
  } catch {
    throw new CliError(`The configuration file ${path} must hold plain data (no functions or class instances).`, 2);
  }
}

function camel(segment: string): string {
  return segment.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

/**
 * An error the CLI prints as one line (no stack) before exiting with `exitCode`:
 * 1 for a failure, 2 for a usage or configuration error.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
