import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { transports } from '@trellis/test-support';
import { getJson, logLines, postJson, runCli, runScript, startCli, startScript, tempDir, workspaceRoot } from './support/cli.js';

// Every test runs the CLI in child processes (each boots Node and the framework): on a busy CI
// machine a few of them take a while, so the limit is generous. Nothing here asserts timings.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const cliVersion = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * Stands in for `npm install` (no registry here): links node_modules/@trellis/{cli,core,host,db-sqlite} to
 * the workspace packages, whose built dist/ and own node_modules resolve the rest.
 */
async function linkWorkspacePackages(project: string): Promise<void> {
  await mkdir(join(project, 'node_modules', '@trellis'), { recursive: true });
  for (const [name, folder] of [
    ['cli', 'packages/cli'],
    ['core', 'packages/core'],
    ['host', 'packages/host'],
    ['db-sqlite', 'packages/adapters/db-sqlite'],
  ]) {
    await symlink(join(workspaceRoot, folder), join(project, 'node_modules', '@trellis', name), 'dir');
  }
}

describe('trellis init', () => {
  let dir: { path: string; remove(): Promise<void> };
  let project: string;
  beforeAll(async () => {
    dir = await tempDir();
    project = join(dir.path, 'My Host');
  });
  afterAll(() => dir?.remove());

  it('scaffolds a host project into a new folder', async () => {
    const result = await runCli(['init', 'My Host'], { cwd: dir.path });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Created my-host in ${project}:`);
    expect(result.stdout).toContain('cd "My Host"');
    expect(result.stdout).toContain('npm install');

    expect((await readdir(project)).sort()).toEqual(['.gitignore', 'README.md', 'modules', 'package.json', 'server.mjs', 'trellis.config.json', 'trellis.modules.mjs']);
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: 'my-host',
      private: true,
      type: 'module',
      scripts: { start: 'node server.mjs' },
      dependencies: { '@trellis/cli': `^${cliVersion}`, '@trellis/core': `^${cliVersion}`, '@trellis/host': `^${cliVersion}`, '@trellis/db-sqlite': `^${cliVersion}` },
    });
    const server = await readFile(join(project, 'server.mjs'), 'utf8');
    expect(server).toContain('createHost(');
    expect(server).toContain('my-host is listening on');
    expect(server).not.toContain('{{');
    expect(JSON.parse(await readFile(join(project, 'trellis.config.json'), 'utf8'))).toMatchObject({ database: { url: 'sqlite:./trellis.db' }, hello: { greeting: 'Hello' } });
    expect(await readFile(join(project, 'README.md'), 'utf8')).toMatch(/^# my-host\n/);
    expect(await readFile(join(project, '.gitignore'), 'utf8')).toContain('*.db');
  });

  // The happy path of --from (tarballs installed with npm, the app started) is test/packaging.int.spec.ts.
  it('refuses --from without the tarballs a scaffold needs (exit 2, nothing written)', async () => {
    const empty = join(dir.path, 'no-tarballs');
    await mkdir(empty);
    await writeFile(join(empty, `trellis-cli-${cliVersion}.tgz`), '');
    const target = join(dir.path, 'from-app');
    const result = await runCli(['init', target, '--from', empty], { cwd: dir.path });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--from ${empty}: no tarball for @trellis/core, @trellis/host, @trellis/db-sqlite`);
    expect(existsSync(target)).toBe(false);
    const missing = await runCli(['init', target, '--from', join(dir.path, 'nowhere')], { cwd: dir.path });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('not a folder');
  });

  it('refuses a non-empty folder (exit 1, nothing written) unless --force', async () => {
    const busy = join(dir.path, 'busy');
    await mkdir(busy);
    await writeFile(join(busy, 'notes.txt'), 'mine');
    const refused = await runCli(['init', busy], { cwd: dir.path });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`trellis: ${busy} is not empty (1 entries). Choose an empty folder, or add --force`);
    expect(await readdir(busy)).toEqual(['notes.txt']);

    const forced = await runCli(['init', busy, '--force'], { cwd: dir.path });
    expect(forced.code, forced.stderr).toBe(0);
    expect(await readFile(join(busy, 'notes.txt'), 'utf8')).toBe('mine');
    expect(existsSync(join(busy, 'server.mjs'))).toBe(true);
  });

  it('refuses a path that is a file (exit 1) and an invalid --name (exit 2)', async () => {
    await writeFile(join(dir.path, 'plain-file'), '');
    const file = await runCli(['init', 'plain-file'], { cwd: dir.path });
    expect(file.code).toBe(1);
    expect(file.stderr).toContain('exists and is not a folder');
    const name = await runCli(['init', 'named', '--name', 'Not A Name'], { cwd: dir.path });
    expect(name.code).toBe(2);
    expect(name.stderr).toContain('"Not A Name" is not a valid npm package name');
  });

  describe('the generated project', () => {
    beforeAll(async () => {
      await linkWorkspacePackages(project);
    });

    it.each(transports)('starts with `node server.mjs` (%s) and serves the built-in API and its own module', async (transport) => {
      const server = await startScript(join(project, 'server.mjs'), [], {
        cwd: project,
        env: { TRELLIS_PORT: '0', TRELLIS_DATABASE: 'sqlite::memory:', TRELLIS_TRANSPORT: transport, TRELLIS__HELLO__GREETING: 'Hi' },
      });
      try {
        expect(server.line).toMatch(/^my-host is listening on http:\/\/127\.0\.0\.1:\d+ \(API docs: http:\/\/127\.0\.0\.1:\d+\/docs\)$/);
        expect(await getJson(`${server.url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
        expect(await getJson(`${server.url}/hello`)).toEqual({ status: 200, body: { message: 'Hi, world' } });

        const registered = await postJson(`${server.url}/auth/register`, { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' });
        expect(registered.status).toBe(201);
        expect(await getJson(`${server.url}/hello/me`, registered.body.token)).toEqual({ status: 200, body: { message: 'Hi, Ada' } });
        expect((await getJson(`${server.url}/hello/me`)).status).toBe(401);

        const openapi = await getJson(`${server.url}/openapi.json`);
        expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/hello', '/hello/me', '/auth/login']));
        expect(logLines(server.stdout()).find((line) => line['msg'] === 'trellis is listening')).toMatchObject({ transport });
      } finally {
        const result = await server.stop('SIGTERM');
        expect(result.code).toBe(0);
      }
    });

    it('is run by `trellis start` from its folder too, with its config file and its modules', async () => {
      const server = await startCli(['--port', '0', '--database', 'sqlite::memory:'], { cwd: project });
      try {
        expect(await getJson(`${server.url}/hello`)).toEqual({ status: 200, body: { message: 'Hello, world' } });
      } finally {
        expect((await server.stop()).code).toBe(0);
      }
    });

    it('is checked by `trellis doctor` and `trellis migrate status` from its folder', async () => {
      const doctor = await runCli(['doctor', '--json', '--database', 'sqlite::memory:'], { cwd: project });
      expect(doctor.code, doctor.stdout).toBe(0);
      const modules = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === 'modules');
      expect(modules.detail).toContain('hello');
      expect(modules.detail).toContain('trellis.modules.mjs');

      const status = await runCli(['migrate', 'status', '--json'], { cwd: project });
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).pending.length).toBeGreaterThan(0);
      expect(existsSync(join(project, 'trellis.db'))).toBe(true);
    });

    it('`node server.mjs` on a taken port says so, as `trellis start` does, before opening the database', async () => {
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const { port } = blocker.address() as { port: number };
      const database = join(project, 'port-check.db');
      try {
        const result = await runScript(join(project, 'server.mjs'), [], { cwd: project, env: { TRELLIS_PORT: String(port), TRELLIS_DATABASE: `sqlite:${database}` } });
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use. Stop the other process or choose another port with --port (or TRELLIS_PORT).`);
        expect(existsSync(database)).toBe(false);
      } finally {
        await new Promise<void>((resolve) => blocker.close(() => resolve()));
      }
    });

    it("rejects a typo in its own module's section, naming the path", async () => {
      const result = await runCli(['openapi'], { cwd: project, env: { TRELLIS__HELLO__GREETNG: 'Hey' } });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('hello.greetng: is not a known option (known: greeting) [set by TRELLIS__HELLO__GREETNG]');
    });
  });
});
