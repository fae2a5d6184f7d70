import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TrellisConfigInput } from '@trellis/core';

/** Options every command that boots a kernel accepts (flags win over environment over file). */
export interface KernelFlags {
  config?: string;
  database?: string;
  port?: string;
  host?: string;
  transport?: string;
}

/** Environment variables with a short name, and the config path each one sets. */
export const environmentVariables: ReadonlyArray<{ name: string; path: string; description: string }> = [
  { name: 'TRELLIS_CONFIG', path: '', description: 'Configuration file (JSON, or a .js/.mjs module whose default export is the object).' },
  { name: 'TRELLIS_DATABASE', path: 'database.url', description: 'sqlite:<path>, sqlite::memory: or postgres://...' },
  { name: 'TRELLIS_PORT', path: 'server.port', description: 'TCP port (0 picks a free one).' },
  { name: 'TRELLIS_HOST', path: 'server.host', description: 'Interface to listen on.' },
  { name: 'TRELLIS_TRANSPORT', path: 'server.transport', description: 'uws or node.' },
  { name: 'TRELLIS_JWT_SECRET', path: 'auth.jwtSecret', description: 'HS256 secret for user JWTs (at least 32 characters).' },
  { name: 'TRELLIS_LOG_LEVEL', path: 'log.level', description: 'fatal, error, warn, info, debug, trace or silent.' },
  { name: 'TRELLIS_PUBLIC_URL', path: 'publicUrl', description: 'External base URL of the API.' },
  { name: 'TRELLIS_FRONTEND_URL', path: 'frontendUrl', description: 'Base URL of the web front end.' },
];

/**
 * Builds the raw configuration: the file (`--config` or TRELLIS_CONFIG), then `TRELLIS_*`
 * variables, then flags. Any config path can also be set as `TRELLIS__<PATH>` with `__` between
 * segments (`TRELLIS__SERVER__MAX_BODY_BYTES=2097152` sets `server.maxBodyBytes`).
 * The kernel validates the result.
 */
export async function loadConfig(flags: KernelFlags, env: NodeJS.ProcessEnv = process.env): Promise<TrellisConfigInput> {
  const file = flags.config ?? env['TRELLIS_CONFIG'];
  const config: Record<string, unknown> = file ? await readConfigFile(file) : {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.startsWith('TRELLIS__')) continue;
    setPath(config, name.slice('TRELLIS__'.length).split('__').filter(Boolean).map(camel).join('.'), value);
  }
  for (const variable of environmentVariables) {
    const value = env[variable.name];
    if (value !== undefined && variable.path) setPath(config, variable.path, value);
  }
  if (flags.database) setPath(config, 'database.url', flags.database);
  if (flags.port) setPath(config, 'server.port', flags.port);
  if (flags.host) setPath(config, 'server.host', flags.host);
  if (flags.transport) setPath(config, 'server.transport', flags.transport);
  return config as TrellisConfigInput;
}

async function readConfigFile(file: string): Promise<Record<string, unknown>> {
  const path = resolve(file);
  let value: unknown;
  try {
    if (['.js', '.mjs', '.cjs'].includes(extname(path))) {
      const loaded = (await import(pathToFileURL(path).href)) as { default?: unknown };
      value = loaded.default;
    } else {
      value = JSON.parse(await readFile(path, 'utf8'));
    }
  } catch (error) {
    throw new CliError(`Cannot read the configuration file ${path}: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(`The configuration file ${path} must hold an object.`);
  }
  return value as Record<string, unknown>;
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

/** An error the CLI prints as one line (no stack) before exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
