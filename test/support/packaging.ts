import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The workspace root. */
export const workspace = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The npm cache the packaging test installs through: shared between runs (so a second run
 * downloads nothing) and kept apart from the user's own cache, since prebuilt native binaries
 * are placed in it (see `seedPrebuilds`). TRELLIS_PACKAGING_NPM_CACHE overrides it.
 */
export const packagingNpmCache = process.env['TRELLIS_PACKAGING_NPM_CACHE'] ?? join(homedir(), '.cache', 'trellis-packaging', 'npm');

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws on a non-zero exit. */
export function run(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => killGroup(child), options.timeoutMs ?? 300_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment npm runs in: the shared cache for npm itself and for install scripts. */
export function npmEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_cache: packagingNpmCache, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', ...extra };
  // The workspace's own settings (pnpm's, vitest's) must not leak into a user's install.
  for (const key of Object.keys(env)) if (key.startsWith('npm_package_') || key.startsWith('npm_lifecycle_') || key === 'npm_config_user_agent' || key.startsWith('PNPM_') || key === 'VITEST' || key.startsWith('VITEST_') || key === 'NODE_OPTIONS') delete env[key];
  return env;
}

/**
 * A long-running process (a server) whose output is watched for a line; `stop()` ends its whole
 * process group (`npm start` runs node under a shell).
 */
export interface Server {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in stdout, or rejects when the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

export function startServer(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Server {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((listener) => listener());
  child.stdout!.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), changed()));
  child.stderr!.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), changed()));
  let exited = false;
  const closed = new Promise<void>((resolve) => child.on('close', () => ((exited = true), changed(), resolve())));
  return {
    child,
    output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${pattern}\n${this.output()}`)), timeoutMs);
        const check = () => {
          const match = pattern.exec(stdout);
          if (match) done(undefined, match);
          else if (exited) done(new Error(`exited (code ${child.exitCode}) before printing ${pattern}\n${this.output()}`));
        };
        const done = (error?: Error, match?: RegExpMatchArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve(match!);
        };
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (!exited) killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000);
      await closed;
      clearTimeout(timer);
    },
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

/** Files of a package tarball (`tar tzf`), without the leading `package/`. */
export async function tarballFiles(tarball: string): Promise<string[]> {
  const listed = await run('tar', ['tzf', tarball], { cwd: workspace });
  if (listed.code !== 0) throw new Error(`tar tzf ${tarball} failed: ${listed.stderr}`);
  return listed.stdout.split('\n').filter(Boolean).map((line) => line.replace(/^package\//, ''));
}

/**
 * Native modules compile from source on this machine (their prebuilt binaries are downloaded from
 * GitHub, which is not reachable), and compiling sqlite3 takes about three minutes. The workspace
 * already compiled the same versions, so each one is offered to prebuild-install through its
 * documented download cache (`<npm cache>/_prebuilds/<digest>-<file>`, the file it would have
 * downloaded): `npm install` then runs every install script exactly as for a user, and
 * prebuild-install unpacks the cached binary instead of downloading or compiling. Returns the
 * packages seeded.
 */
export async function seedPrebuilds(): Promise<string[]> {
  const store = join(workspace, 'node_modules', '.pnpm');
  const prebuildUtil = readdirSync(store).find((entry) => entry.startsWith('prebuild-install@'));
  if (!prebuildUtil) return [];
  const seeded: string[] = [];
  const cacheDir = join(packagingNpmCache, '_prebuilds');
  await mkdir(cacheDir, { recursive: true });
  for (const entry of readdirSync(store)) {
    const match = /^((?:@[^+]+\+)?[^@]+)@([^_]+)/.exec(entry);
    if (!match) continue;
    const name = match[1]!.replace('+', '/');
    const dir = join(store, entry, 'node_modules', name);
    const manifestFile = join(dir, 'package.json');
    if (!existsSync(manifestFile)) continue;
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { name: string; version: string; scripts?: Record<string, string>; binary?: { napi_versions?: number[]; module_name?: string }; repository?: unknown };
    const install = manifest.scripts?.['install'] ?? '';
    if (!install.includes('prebuild-install')) continue;
    const release = join(dir, 'build', 'Release');
    const binaries = existsSync(release) ? readdirSync(release).filter((file) => file.endsWith('.node')) : [];
    if (!binaries.length) continue;
    const napi = /-r\s+napi|--runtime[= ]napi/.test(install);
    const abi = napi ? String(Math.max(...(manifest.binary?.napi_versions ?? [3]).filter((v) => v <= Number(process.versions.napi)))) : process.versions.modules;
    const url = await downloadUrl(join(store, prebuildUtil, 'node_modules', 'prebuild-install', 'util.js'), manifest, napi ? 'napi' : 'node', abi);
    const file = join(cacheDir, `${createHash('sha512').update(url).digest('hex').slice(0, 6)}-${basename(url).replace(/[^a-zA-Z0-9.]+/g, '-')}`);
    if (!existsSync(file)) {
      // Written aside and renamed, so a concurrent run never sees half a file.
      const partial = `${file}.${process.pid}.tmp`;
      const packed = await run('tar', ['-czf', partial, ...binaries.map((binary) => `build/Release/${binary}`)], { cwd: dir });
      if (packed.code !== 0) throw new Error(`could not pack the prebuilt ${name}: ${packed.stderr}`);
      await rename(partial, file);
    }
    seeded.push(`${manifest.name}@${manifest.version}`);
  }
  return seeded;
}

/** The URL prebuild-install downloads for this package, computed by prebuild-install itself. */
async function downloadUrl(utilFile: string, pkg: unknown, runtime: string, abi: string): Promise<string> {
  const { createRequire } = await import('node:module');
  const util = createRequire(import.meta.url)(utilFile) as { getDownloadUrl(opts: Record<string, unknown>): string };
  return util.getDownloadUrl({ pkg, runtime, abi, platform: process.platform, arch: process.arch, libc: process.env['LIBC'] ?? '', 'tag-prefix': 'v' });
}
