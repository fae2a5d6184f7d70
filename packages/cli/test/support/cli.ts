import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The CLI is tested as a shell user runs it: the built bin in a child process. `pnpm test` builds
 * first; after changing packages/cli/src, rebuild with `cd packages/cli && npx tsup`.
 */
export const cliBin = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
export const workspaceRoot = fileURLToPath(new URL('../../../../', import.meta.url));

export function requireBuiltCli(): void {
  if (!existsSync(cliBin)) throw new Error(`${cliBin} is missing: build first (pnpm build, or cd packages/cli && npx tsup after building core, adapters and host).`);
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed. */
  input?: string;
  timeoutMs?: number;
}

/** The environment of a CLI run: this process's, minus every TRELLIS_* setting (the test chooses its own), JSON logs. */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('TRELLIS_')) env[name] = value;
  env['TRELLIS_LOG_FORMAT'] = 'json';
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

function spawnCli(command: string, args: readonly string[], options: RunOptions): ChildProcess {
  return spawn(process.execPath, [command, ...args], { cwd: options.cwd, env: cliEnv(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Runs `trellis <args>` to completion. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  return runScript(cliBin, args, options);
}

/** Runs `node <script> <args>` to completion (collecting stdout and stderr). */
export function runScript(script: string, args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  requireBuiltCli();
  const child = spawnCli(script, args, options);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin!.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`trellis ${args.join(' ')} did not finish within ${options.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface RunningCli {
  /** The URL printed on stdout. */
  url: string;
  /** The line printed on stdout once listening. */
  line: string;
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>;
}

/** Starts a long-running script (`trellis start`, a generated server.mjs) and waits for its "listening on <url>" line. */
export function startScript(script: string, args: readonly string[], options: RunOptions = {}): Promise<RunningCli> {
  requireBuiltCli();
  const child = spawnCli(script, args, options);
  let stdout = '';
  let stderr = '';
  child.stdin!.end();
  const exited = new Promise<CliResult>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} did not print its URL within ${options.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^(.*listening on (http:\/\/\S+).*)$/m.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[2]!,
        line: match[1]!,
        child,
        stdout: () => stdout,
        stderr: () => stderr,
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
    void exited.then((result) => {
      clearTimeout(timer);
      reject(new Error(`${script} ${args.join(' ')} exited (${result.code ?? result.signal}) before listening\nstdout: ${result.stdout}\nstderr: ${result.stderr}`));
    });
  });
}

/** `trellis start <args>` until its URL is printed. */
export function startCli(args: readonly string[], options: RunOptions = {}): Promise<RunningCli> {
  return startScript(cliBin, ['start', ...args], options);
}

/** A fresh temporary folder, removed by the returned function. */
export async function tempDir(prefix = 'trellis-cli-'): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** JSON log lines from stderr (lines that are not JSON are skipped). */
export function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return {};
      }
    });
}

export async function postJson(url: string, body: unknown, token?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

export async function getJson(url: string, token?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body };
}

/**
 * A database URL a second process can open: a SQLite file in `dir`, or a fresh PostgreSQL
 * database (from @trellis/test-support) dropped by `drop()`.
 */
export async function cliDatabase(db: { name: 'sqlite' | 'postgres'; create(): Promise<{ url: string; drop(): Promise<void> }> }, dir: string, file = 'trellis.db'): Promise<{ url: string; drop(): Promise<void> }> {
  if (db.name === 'sqlite') return { url: `sqlite:${join(dir, file)}`, drop: async () => undefined };
  return db.create();
}

let inProcessQueue: Promise<unknown> = Promise.resolve();

/**
 * Runs `trellis <args>` inside the test process through the CLI's exported entry (`runCli` of
 * @trellis/cli): the same program, option parsing, error reporting and exit codes as the bin, for
 * one-shot commands whose result is their exit code, their stdout and the messages they print on
 * stderr. It saves booting Node and loading the framework for every command (about a second of
 * CPU each), so a suite that runs dozens of commands runs a handful through the built bin and the
 * rest here. Not for `start` or anything reading stdin, nor for assertions on log lines (the
 * logger writes to file descriptor 2 directly). The environment is built as for a child process
 * (`cliEnv`) and the working directory changed for the call; calls are serialised.
 */
export function runCliInProcess(args: readonly string[], options: Omit<RunOptions, 'input' | 'timeoutMs'> = {}): Promise<CliResult> {
  const call = inProcessQueue.then(() => runInProcess(args, options));
  inProcessQueue = call.catch(() => undefined);
  return call;
}

async function runInProcess(args: readonly string[], options: Omit<RunOptions, 'input' | 'timeoutMs'>): Promise<CliResult> {
  const { runCli: run } = await import('@trellis/cli');
  const env = process.env;
  const cwd = process.cwd();
  const writes = { stdout: process.stdout.write, stderr: process.stderr.write };
  let stdout = '';
  let stderr = '';
  const capture = (append: (text: string) => void) =>
    function (chunk: string | Uint8Array, ...rest: unknown[]): boolean {
      append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  process.env = cliEnv(options.env);
  if (options.cwd) process.chdir(options.cwd);
  process.stdout.write = capture((text) => (stdout += text)) as typeof process.stdout.write;
  process.stderr.write = capture((text) => (stderr += text)) as typeof process.stderr.write;
  try {
    const code = await run([process.execPath, cliBin, ...args]);
    return { code, signal: null, stdout, stderr };
  } finally {
    process.stdout.write = writes.stdout;
    process.stderr.write = writes.stderr;
    process.chdir(cwd);
    process.env = env;
  }
}
