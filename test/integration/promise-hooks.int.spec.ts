import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ContractValidator, transports, type TestHost, type TestResponse } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { actor, createDocument, createProject, doc, paragraph } from '../../packages/host/test/documents.fixtures.js';
import { authorize, discover, exchange, REDIRECT_URI } from '../../packages/host/test/oauth-helpers.js';
import { readNdjson } from '../../packages/host/test/support/run-clients.js';
import { wf } from '../../packages/host/test/runs.fixtures.js';

// On Node 20 the first AsyncLocalStorage#run (or any enabled async hook) switches promise hooks
// on for the whole process, for good: every later `await` pays for them (issue #14: cached
// GET /auth/me -24 %, JSON-RPC -45 %). MikroORM enters one in `em.transactional` and in every
// `em.flush()`; Trellis avoids both (kernel/transaction.ts, @trellis/db-mikro-orm). This suite runs a
// reference host in a process of its own (vitest's may have hooks on), drives the writes a real
// server sees over real sockets, and asks that process whether promise hooks are on.

interface Probe {
  asyncId: number;
  culprits: string[];
}

const fixture = fileURLToPath(new URL('./fixtures/promise-hooks-host.ts', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));

describe.each(transports)('promise hooks after writes, over %s', (transport) => {
  let child: ChildProcess;
  let t: TestHost;
  let atStart: number;
  const replies: Array<(message: any) => void> = [];

  const ask = <T>(message: Record<string, unknown>): Promise<T> =>
    new Promise<T>((resolve) => {
      replies.push(resolve);
      child.send(message);
    });

  beforeAll(async () => {
    child = fork(fixture, [], {
      cwd: root,
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, PROBE_TRANSPORT: transport, TSX_TSCONFIG_PATH: fileURLToPath(new URL('./fixtures/tsconfig.json', import.meta.url)) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('message', (message) => replies.shift()?.(message));
    const ready = await new Promise<{ url: string; transport: string; atStart: number }>((resolve, reject) => {
      replies.push(resolve);
      child.once('exit', (code) => reject(new Error(`the host process exited with ${code} before it was ready`)));
    });
    expect(ready.transport).toBe(transport);
    atStart = ready.atStart;
    t = clientOf(ready.url);
  });

  afterAll(async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ cmd: 'stop' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });

  it('are off after start-up and stay off through registrations, logins, token grants, document edits, credit writes, runs and paginated lists', async () => {
    // The probe reads 0 in a process without promise hooks, before and after the host started.
    expect(atStart).toBe(0);
    expect(await ask<Probe>({ cmd: 'probe' })).toEqual({ asyncId: 0, culprits: [] });

    // Register and log in.
    const owner = await actor(t);
    const login = await t.request('POST', '/auth/login', { body: { email: owner.email, password: 'correct horse battery' } });
    expect(login.status, login.text).toBe(200);

    // OAuth: an app, a consent, an authorization-code grant and a refresh-token grant.
    await ask({ cmd: 'promote', userId: owner.userId });
    const app = await t.request('POST', '/admin/oauth-apps', {
      token: owner.token,
      body: { name: 'Probe app', description: 'Promise hooks probe', redirect_uris: [REDIRECT_URI], scopes: ['profile:read'] },
    });
    expect(app.status, app.text).toBe(201);
    const granted = await exchange(await discover(t), app.body, await authorize(t as never, app.body, owner.token));
    expect(granted.refresh_token).toEqual(expect.any(String));
    const refreshed = await t.request('POST', '/oauth/token', {
      raw: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: granted.refresh_token!, client_id: app.body.client_id }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(refreshed.status, refreshed.text).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(granted.refresh_token);

    // A document: created, then edited with str_replace.
    const project = await createProject(t, owner.token);
    const document = await createDocument(t, owner.token, project.id, { content: doc(paragraph('a', 'banana')) });
    const edited = await t.request('POST', `/documents/${document.id}/edit`, {
      token: owner.token,
      body: { base_version: document.content_hash, mode: 'commands', commands: [{ op: 'str_replace', blockId: 'a', old_str: 'nan', new_str: 'NAN' }] },
    });
    expect(edited.status, edited.text).toBe(200);

    // Credits: a reservation, settled.
    const teams = await t.request('GET', '/teams', { token: owner.token });
    const reservation = await t.request('POST', '/billing/credits/reservations', { token: owner.token, body: { teamId: teams.body.items[0].id, amount: 3, reason: 'probe' } });
    expect(reservation.status, reservation.text).toBe(201);
    const settled = await t.request('POST', `/billing/credits/reservations/${reservation.body.data.id}/settle`, { token: owner.token, body: { usedCredits: 2 } });
    expect(settled.status, settled.text).toBe(200);

    // A workflow run with a code block (sandboxed), streamed to its end.
    const workflow = await createDocument(t, owner.token, project.id, { content: wf.doc(wf.input('n', { type: 'integer' }), wf.code('calc', 'return inputs.n * 2;')) });
    const run = await readNdjson(`${t.url}/documents/${workflow.id}/run`, { token: owner.token, body: { format: 'ndjson', inputs: { n: 4 } } });
    expect(run.status, run.text).toBe(200);
    expect(run.events.at(-1)?.type).toBe('run_complete');

    // Paginated lists (MikroORM's findAndCount enters an async context of its own), one of them
    // with a raw SQL fragment in its filter (the search's case-insensitive name match).
    const runs = await t.request('GET', `/project/${project.id}/runs?size=5`, { token: owner.token });
    expect(runs.status, runs.text).toBe(200);
    expect(runs.body.total).toBeGreaterThanOrEqual(1);
    const block = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: 'Probe Flow', type: 'workflow' } });
    expect(block.status, block.text).toBe(201);
    const found = await t.request('GET', `/project/${project.id}/search?type=page&q=probe%20f`, { token: owner.token });
    expect(found.status, found.text).toBe(200);
    expect(found.body.items.map((item: { id: string }) => item.id)).toEqual([block.body.id]);
    expect(found.body.total).toBe(1);

    // JSON-RPC on /v3/wss: authenticate and ping.
    expect(await rpcRoundTrip(`${t.wsUrl}/v3/wss`, owner.token)).toBe('pong');

    const after = await ask<Probe>({ cmd: 'probe' });
    expect(after.culprits, `something switched async context on:\n${after.culprits.join('\n\n')}`).toEqual([]);
    expect(after.asyncId).toBe(0);
  });

  it('the probe sees promise hooks once an AsyncLocalStorage is entered (it can fail)', async () => {
    const control = await ask<Probe>({ cmd: 'control' });
    expect(control.asyncId).toBeGreaterThan(0);
    expect(control.culprits.at(-1)).toMatch(/^AsyncLocalStorage#run/);
  });
});

/** The parts of a TestHost the shared fixtures use, for a host in another process. */
function clientOf(url: string): TestHost {
  const contract = new ContractValidator(url);
  let users = 0;
  const request = async (method: string, path: string, options: { body?: unknown; token?: string; headers?: Record<string, string>; raw?: string } = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const response = await fetch(`${url}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    const parsed = (response.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
    await contract.check(method, path, response.status, response.headers.get('content-type'), text);
    return { status: response.status, headers: response.headers, body: parsed, text };
  };
  return {
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    request,
    contract,
    async register(email = `probe${++users}-${process.pid}@example.com`, password = 'correct horse battery') {
      const r = await request('POST', '/auth/register', { body: { email, password } });
      if (r.status !== 201) throw new Error(`register failed: ${r.status} ${r.text}`);
      return { token: r.body.token, userId: r.body.user.id, email };
    },
  } as unknown as TestHost;
}

/** Opens /v3/wss, authenticates with `token`, sends `ping` and answers its result. */
function rpcRoundTrip(url: string, token: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}?token=${encodeURIComponent(token)}`);
    ws.once('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token }, id: 1 })));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
      if (message.id === 1) {
        if (message.error) reject(new Error(`auth failed: ${String(data)}`));
        else ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'ping', id: 2 }));
      } else if (message.id === 2) {
        ws.close();
        resolve(message.result);
      }
    });
    ws.once('error', reject);
  });
}
