import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { ContractValidator, type TestHost } from '@trellis/test-support';

/**
 * Host and worker processes for the suites that need a real deployment (several `trellis start`
 * and `trellis worker` processes, each an OS process of its own): the built CLI in child processes,
 * and a `TestHost`-shaped client over plain HTTP whose responses the contract checker validates.
 */
export const cliBin = fileURLToPath(new URL('../../../cli/dist/bin.js', import.meta.url));

export interface TrellisProcess {
  child: ChildProcess;
  /** What it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (unless it already exited), then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * `trellis <args>` (the built CLI) in a child process, resolved once its output matches `ready`.
 * The environment is this process's without its TRELLIS_* settings, plus `env`.
 */
export async function spawnTrellis(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<TrellisProcess & { match: RegExpMatchArray }> {
  if (!existsSync(cliBin)) throw new Error(`${cliBin} is missing: build the workspace first (pnpm build)`);
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('TRELLIS_')) childEnv[name] = value;
  Object.assign(childEnv, env);
  const child = spawn(process.execPath, [cliBin, ...args], { cwd: options.cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  let output = '';
  const read = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on('data', read);
  child.stderr!.on('data', read);
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`trellis ${args[0]} did not start: ${output}`)), options.timeoutMs ?? 180_000);
    const check = () => {
      const found = ready.exec(output);
      if (!found) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      child.stderr!.off('data', check);
      resolve(found);
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then((r) => {
      clearTimeout(timer);
      reject(new Error(`trellis ${args[0]} exited (${r.code ?? r.signal}): ${output}`));
    });
  });
  return {
    child,
    match,
    exited,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The part of `TestHost` a suite needs (`request`), over plain HTTP to a child process (one
 * connection per request: no idle keep-alive connection for the server to close under a request).
 * Every response is checked against the child's `/openapi.json` by the suites' one contract
 * checker (`ContractValidator`), as `startTestHost`'s client does.
 */
export function overHttp(baseUrl: string): TestHost {
  const contract = new ContractValidator(baseUrl);
  const request = async (method: string, path: string, options: { token?: string; body?: unknown } = {}) => {
    const response = await send(method, path, options);
    await contract.check(method, path, response.status, response.headers.get('content-type'), response.text);
    return response;
  };
  const send = (method: string, path: string, options: { token?: string; body?: unknown }) =>
    new Promise<{ status: number; headers: Headers; text: string; body: any }>((resolve, reject) => {
      const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
      const req = httpRequest(
        `${baseUrl}${path}`,
        {
          method,
          agent: false,
          headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any = text;
            try {
              body = text ? JSON.parse(text) : undefined;
            } catch {
              // not JSON
            }
            const headers = new Headers();
            for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
            resolve({ status: res.statusCode ?? 0, headers, text, body });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { request, contract } as unknown as TestHost;
}

/** `read` until `done` holds, every `everyMs`, for at most `ms` (then throws naming `what`). */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, ms = 60_000, everyMs = 200): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
