import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { transports } from '@trellis/test-support';
import { getJson, logLines, runCli, startCli, tempDir } from './support/cli.js';

// Every test runs the CLI in child processes (each boots Node and the framework): on a busy CI
// machine a few of them take a while, so the limit is generous. Nothing here asserts timings.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const listeningLine = /^Trellis is listening on (http:\/\/127\.0\.0\.1:(\d+)) \(API docs: \1\/docs\)$/;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function refused(url: string): Promise<boolean> {
  try {
    await fetch(url);
    return false;
  } catch {
    return true;
  }
}

describe.each(transports)('trellis start over %s', (transport) => {
  let dir: { path: string; remove(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.remove());

  it('prints one line with the URL and the docs once listening, answers /healthz, and stops cleanly on SIGTERM', async () => {
    const server = await startCli(['--port', '0', '--database', 'sqlite::memory:', '--transport', transport], { cwd: dir.path });
    let stopped = false;
    try {
      expect(server.stdout().trimEnd().split('\n')).toEqual([server.line]);
      expect(server.line).toMatch(listeningLine);
      expect(Number(listeningLine.exec(server.line)![2])).toBeGreaterThan(0);

      const health = await getJson(`${server.url}/healthz`);
      expect(health).toEqual({ status: 200, body: { status: 'ok' } });
      const ready = await getJson(`${server.url}/readyz`);
      expect(ready.body).toEqual({ status: 'ready', database: true });
      const docs = await fetch(`${server.url}/docs`);
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toContain('text/html');

      // Logs are JSON lines on stderr and name the transport really in use.
      const listening = logLines(server.stderr()).find((line) => line['msg'] === 'trellis is listening');
      expect(listening).toMatchObject({ transport, url: server.url, database: 'sqlite::memory:' });
      // Migrations were applied at start (database.migrateOnStart defaults to true).
      expect(logLines(server.stderr()).some((line) => line['msg'] === 'applied pending migrations')).toBe(true);

      const result = await server.stop('SIGTERM');
      stopped = true;
      expect(result.signal).toBeNull();
      expect(result.code).toBe(0);
      expect(logLines(result.stderr).map((line) => line['msg'])).toContain('stopped');
      expect(await refused(`${server.url}/healthz`)).toBe(true);
    } finally {
      if (!stopped) await server.stop('SIGKILL');
    }
  });

  it('stops cleanly on SIGINT too', async () => {
    const server = await startCli(['--port', '0', '--database', 'sqlite::memory:', '--transport', transport], { cwd: dir.path });
    const result = await server.stop('SIGINT');
    expect(result.code).toBe(0);
    expect(logLines(result.stderr).find((line) => line['msg'] === 'stopping: refusing new connections and draining requests in flight')).toMatchObject({ signal: 'SIGINT' });
  });

  it('takes port, host, database and transport from TRELLIS_* variables', async () => {
    const server = await startCli([], {
      cwd: dir.path,
      env: { TRELLIS_PORT: '0', TRELLIS_HOST: '127.0.0.1', TRELLIS_DATABASE: `sqlite:${join(dir.path, 'env.db')}`, TRELLIS_TRANSPORT: transport },
    });
    try {
      expect(server.line).toMatch(listeningLine);
      expect((await getJson(`${server.url}/healthz`)).status).toBe(200);
      const listening = logLines(server.stderr()).find((line) => line['msg'] === 'trellis is listening');
      expect(listening).toMatchObject({ transport, database: `sqlite:${join(dir.path, 'env.db')}` });
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
  });

  it('takes its settings from --config, with flags winning over the file', async () => {
    const file = join(dir.path, `start-${transport}.json`);
    await writeFile(file, JSON.stringify({ server: { port: 1, transport, basePath: '/api' }, database: { url: 'sqlite::memory:' }, auth: { jwtSecret: 'a-config-file-secret-of-32-characters!' } }));
    const server = await startCli(['--config', file, '--port', '0'], { cwd: dir.path });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
      expect((await getJson(`${server.url}/healthz`)).status).toBe(200);
      // The configured secret is used: no development-only warning.
      expect(server.stderr()).not.toContain('auth.jwtSecret is not set');
    } finally {
      await server.stop();
    }
  });

  it('exits 1 with a clear message when the port is taken, before touching the database', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const result = await runCli(['start', '--port', String(port), '--database', `sqlite:${join(dir.path, 'never.db')}`, '--transport', transport], { cwd: dir.path });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`trellis: Port ${port} on 127.0.0.1 is already in use. Stop the other process or choose another port with --port (or TRELLIS_PORT).`);
      expect(logLines(result.stderr).some((line) => line['msg'] === 'applied pending migrations')).toBe(false);
      expect(existsSync(join(dir.path, 'never.db'))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('refuses a port another trellis host already listens on (uWebSockets.js shares ports unless told not to)', async () => {
    const port = await freePort();
    const first = await startCli(['--port', String(port), '--database', 'sqlite::memory:', '--transport', transport], { cwd: dir.path });
    try {
      const second = await runCli(['start', '--port', String(port), '--database', 'sqlite::memory:', '--transport', transport], { cwd: dir.path });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`);
      expect((await getJson(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      expect((await first.stop()).code).toBe(0);
    }
  });
});

describe('trellis start: other failures', () => {
  it('exits 1 naming the database when it cannot be reached', async () => {
    const result = await runCli(['start', '--port', '0', '--database', 'postgres://nobody@127.0.0.1:1/none']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('trellis: Cannot connect to the database postgres://nobody@127.0.0.1:1/none');
  });

  it('exits 1 when the host is not an address of this machine', async () => {
    const result = await runCli(['start', '--port', '8089', '--host', '192.0.2.1', '--database', 'sqlite::memory:']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Cannot listen on 192.0.2.1: it is not an address of this machine.');
  });
});
