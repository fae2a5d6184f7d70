import { pino, type Logger } from 'pino';
import type { AdapterBinding, Kernel, TrellisConfigInput, TrellisModule } from '@trellis/core';
import { createHost, type Host } from '@trellis/host';
import { ContractValidator, registerContract, unregisterContract } from './contract.js';
import type { TestDatabase } from './databases.js';

export type TransportName = 'uws' | 'node';
export const transports: readonly TransportName[] = ['uws', 'node'];

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestHost {
  host: Host;
  kernel: Kernel;
  /** `http://127.0.0.1:<port>` (plus the base path). */
  url: string;
  /** `ws://127.0.0.1:<port>` (plus the base path). */
  wsUrl: string;
  /**
   * A JSON request; `token` is sent as a bearer token. Never throws on HTTP errors; throws
   * `ContractViolation` when the response breaks `/openapi.json` (see `contract.ts`).
   */
  request<T = any>(method: string, path: string, options?: { body?: unknown; token?: string; headers?: Record<string, string>; raw?: string | Uint8Array }): Promise<TestResponse<T>>;
  /** The contract check of this host's responses (the shared clients use it). */
  contract: ContractValidator;
  /** Registers a user through the API and returns its JWT and id. */
  register(email?: string, password?: string): Promise<{ token: string; userId: string; email: string }>;
  close(): Promise<void>;
}

let counter = 0;

export const testJwtSecret = 'test-secret-test-secret-test-secret-0123';

/**
 * A real host on 127.0.0.1 and an ephemeral port, on a fresh database, with the given transport.
 * Tear it down with `close()` (in `afterAll`).
 */
export async function startTestHost(
  db: TestDatabase,
  transport: TransportName,
  options: { config?: TrellisConfigInput; modules?: readonly TrellisModule[]; adapters?: readonly AdapterBinding[]; logger?: Logger } = {},
): Promise<TestHost> {
  const handle = await db.create();
  const config = {
    ...options.config,
    server: { host: '127.0.0.1', port: 0, ...options.config?.server, transport },
    // Suites register and log in many users from 127.0.0.1: throttling is tested on its own.
    auth: { jwtSecret: testJwtSecret, rateLimit: { perIp: 1_000_000, perAccount: 1_000_000 }, ...options.config?.auth },
  } as TrellisConfigInput;
  const host = createHost({
    config,
    database: handle.adapter,
    modules: options.modules,
    adapters: options.adapters,
    logger: options.logger ?? pino({ level: process.env.TRELLIS_TEST_LOG ?? 'silent' }),
  });
  await host.start();
  if (host.transport !== transport) throw new Error(`asked for the ${transport} transport, got ${host.transport}`);
  const url = host.url;
  const contract = new ContractValidator(url);
  registerContract(url, contract);
  const request: TestHost['request'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | Uint8Array | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
    const response = await fetch(`${url}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    await contract.check(method, path, response.status, response.headers.get('content-type'), text);
    return { status: response.status, headers: response.headers, body: parsed as any, text };
  };
  return {
    host,
    kernel: host.kernel,
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    request,
    contract,
    async register(email = `user${++counter}-${process.pid}-${Date.now()}@example.com`, password = 'correct horse battery') {
      const response = await request('POST', '/auth/register', { body: { email, password } });
      if (response.status !== 201) throw new Error(`register failed: ${response.status} ${response.text}`);
      return { token: response.body.token, userId: response.body.user.id, email };
    },
    async close() {
      unregisterContract(url);
      await host.stop();
      await handle.drop();
    },
  };
}
