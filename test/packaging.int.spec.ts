import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { npmEnv, run, seedPrebuilds, startServer, tarballFiles, workspace, type Server } from './support/packaging.js';

// The packages as a user gets them: every package packed with `pnpm pack` (the build of the test
// command comes first), the tarballs installed with plain npm into folders outside the workspace
// (third-party dependencies from the npm registry), and used there the way the docs say.
// Child processes boot Node and the framework (and npm installs): generous limits for a busy CI
// machine. Nothing here asserts timings.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 600_000 });

const root = await mkdtemp(join(tmpdir(), 'trellis-packaging-'));
const tarballs = join(root, 'tarballs');
const app = join(root, 'app');
const packageDirs = ['packages/core', 'packages/host', 'packages/cli', 'packages/client', ...readdirSync(join(workspace, 'packages/adapters')).map((name) => `packages/adapters/${name}`)];
const manifests = packageDirs.map((dir) => ({ dir, ...(JSON.parse(readFileSync(join(workspace, dir, 'package.json'), 'utf8')) as { name: string; version: string; files: string[]; bin?: Record<string, string> }) }));
const tarballOf = (name: string) => {
  const manifest = manifests.find((m) => m.name === name)!;
  return join(tarballs, `${name.replace('@', '').replace('/', '-')}-${manifest.version}.tgz`);
};
const servers: Server[] = [];
const installed = (dir: string, name: string) => existsSync(join(dir, 'node_modules', name, 'package.json'));
const trellisBin = () => join(app, 'node_modules', '@trellis', 'cli', 'dist', 'bin.js');
/** node-gyp leaves its object files in build/Release/obj.target; a prebuilt binary comes without them. */
const compiled = (dir: string, name: string) => existsSync(join(dir, 'node_modules', name, 'build', 'Release', 'obj.target'));

async function npm(args: string[], cwd: string, timeoutMs = 300_000) {
  const result = await run('npm', args, { cwd, env: npmEnv(), timeoutMs });
  if (result.code !== 0) throw new Error(`npm ${args.join(' ')} failed in ${cwd} (code ${result.code}):\n${result.stdout}\n${result.stderr}`);
  return result;
}

async function healthz(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}/healthz`);
  return { status: response.status, body: await response.json() };
}

beforeAll(async () => {
  for (const { dir } of manifests) {
    if (!existsSync(join(workspace, dir, 'dist', 'index.js'))) throw new Error(`${dir} is not built: run \`pnpm build\` first (the test command does).`);
  }
  const packed = await run('npx', ['-y', 'pnpm@10', '-r', '--filter', './packages/**', 'pack', '--pack-destination', tarballs], { cwd: workspace, env: npmEnv() });
  if (packed.code !== 0) throw new Error(`pnpm pack failed:\n${packed.stdout}\n${packed.stderr}`);
  await seedPrebuilds();
  // An application on SQLite: the CLI, the host, the kernel and the SQLite adapter, plus Express.
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'packaging-app', private: true, type: 'module' }));
  await npm(['install', ...['@trellis/cli', '@trellis/core', '@trellis/host', '@trellis/db-sqlite', '@trellis/db-mikro-orm'].map(tarballOf), 'express@^5.1.0'], app);
}, 600_000);

afterAll(async () => {
  await Promise.allSettled(servers.map((server) => server.stop()));
  await rm(root, { recursive: true, force: true });
});

describe('packages installed from their tarballs with npm, outside the workspace', () => {
  it('packs every package with its README, LICENSE, built entry points and type declarations', async () => {
    for (const manifest of manifests) {
      const files = await tarballFiles(tarballOf(manifest.name));
      expect(files, manifest.name).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts']));
      // Sources, tests and build settings stay out.
      expect(files.filter((file) => /^(src|test)\/|tsconfig|tsup\.config/.test(file)), manifest.name).toEqual([]);
      const packedManifest = JSON.parse((await run('tar', ['xzf', tarballOf(manifest.name), '-O', 'package/package.json'], { cwd: root })).stdout);
      // workspace: ranges are rewritten to real versions, and the entry points carry types.
      expect(JSON.stringify(packedManifest), manifest.name).not.toContain('workspace:');
      expect(packedManifest.exports['.'].types, manifest.name).toBe('./dist/index.d.ts');
      expect(packedManifest.engines.node, manifest.name).toBe('>=20.19');
      if (manifest.bin) for (const bin of Object.values(manifest.bin)) expect(files, manifest.name).toContain(bin.replace(/^\.\//, ''));
    }
    expect(await tarballFiles(tarballOf('@trellis/cli'))).toEqual(expect.arrayContaining(['templates/init/server.mjs', 'templates/init/README.md']));
    // The host lists every adapter as an optional peer, none as a dependency.
    const host = JSON.parse((await run('tar', ['xzf', tarballOf('@trellis/host'), '-O', 'package/package.json'], { cwd: root })).stdout);
    const adapters = manifests.filter((m) => m.dir.startsWith('packages/adapters/') && m.name !== '@trellis/ai-sdk' && m.name !== '@trellis/db-mikro-orm').map((m) => m.name);
    expect(Object.keys(host.peerDependencies).sort()).toEqual(adapters.sort());
    for (const name of adapters) expect(host.peerDependenciesMeta[name], name).toEqual({ optional: true });
    expect(Object.keys(host.dependencies).filter((name) => name.startsWith('@trellis/'))).toEqual(['@trellis/core']);
  });

  it('installs a SQLite-only application without pg, ioredis, the optional better-sqlite3 driver or any adapter it does not use', () => {
    expect(installed(app, '@trellis/db-sqlite')).toBe(true);
    for (const name of ['pg', 'ioredis', 'bullmq', 'better-sqlite3', '@mikro-orm/better-sqlite', '@trellis/db-postgres', '@trellis/pubsub-redis', '@trellis/ratelimit-redis', '@trellis/ratelimit-postgres', '@trellis/queue-bullmq', '@trellis/payments-stripe']) {
      expect(installed(app, name), name).toBe(false);
    }
    // The default driver came from the binary the workspace built (seedPrebuilds): nothing compiled.
    expect(compiled(app, 'sqlite3')).toBe(false);
  });

  it('starts a host from the installed CLI and answers /healthz', async () => {
    const server = startServer('node', [trellisBin(), 'start', '-p', '0', '-d', `sqlite:${join(root, 'cli.db')}`], { cwd: app, env: npmEnv() });
    servers.push(server);
    const [, url] = await server.waitFor(/Trellis is listening on (http:\/\/\S+) /);
    expect(await healthz(url!)).toMatchObject({ status: 200, body: { status: 'ok' } });
    // The console ships inside the installed @trellis/host (dist/console): its page and script.
    const consolePage = await fetch(`${url}/console`);
    expect(consolePage.status).toBe(200);
    const script = /src="([^"]+\.js)"/.exec(await consolePage.text())?.[1];
    expect(script).toBeDefined();
    expect((await fetch(new URL(script!, url)).then((r) => r.status))).toBe(200);
    await server.stop();
  });

  it('stops with a message naming the adapter package a setting needs when it is not installed', async () => {
    const postgres = await run('node', [trellisBin(), 'start', '-p', '0', '-d', 'postgres://trellis@127.0.0.1:1/none'], { cwd: app, env: npmEnv() });
    expect(postgres.code).toBe(2);
    expect(postgres.stderr).toContain('needs the package @trellis/db-postgres, which is not installed');
    expect(postgres.stderr).toContain('npm install @trellis/db-postgres');
    const redis = await run('node', [trellisBin(), 'start', '-p', '0', '-d', 'sqlite::memory:'], { cwd: app, env: npmEnv({ TRELLIS_REDIS_URL: 'redis://127.0.0.1:1' }) });
    expect(redis.code).toBe(2);
    expect(redis.stderr).toMatch(/adapters\.redisUrl needs the package @trellis\/(pubsub|ratelimit)-redis/);
  });

  it('embeds the kernel in an Express app', async () => {
    await writeFile(
      join(app, 'express-app.mjs'),
      `import { createServer } from 'node:http';
import express from 'express';
import { coreModules, createKernel } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { attachWebSockets, toNodeHandler } from '@trellis/host';

const kernel = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, config: { auth: { jwtSecret: 'x'.repeat(40) }, log: { level: 'error' } } });
await kernel.start();
const app = express();
app.use('/api', toNodeHandler(kernel));
app.get('/', (req, res) => res.json({ mine: true }));
const server = createServer(app);
attachWebSockets(server, kernel, { prefix: '/api' });
server.listen(0, '127.0.0.1', () => console.log('express on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => kernel.stop().then(() => process.exit(0)));
`,
    );
    const server = startServer('node', ['express-app.mjs'], { cwd: app, env: npmEnv() });
    servers.push(server);
    const [, url] = await server.waitFor(/express on (http:\/\/\S+)/);
    expect(await healthz(`${url}/api`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await (await fetch(`${url}/`)).json()).toEqual({ mine: true });
    const registered = await fetch(`${url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'express@example.com', password: 'correct horse battery' }) });
    expect(registered.status).toBe(201);
    await server.stop();
  });

  it('scaffolds with `trellis init --from <checkout>`, packing the built checkout into the scaffold', async () => {
    const scaffold = join(root, 'from-checkout');
    const init = await run('node', [trellisBin(), 'init', scaffold, '--from', workspace], { cwd: root, env: npmEnv() });
    expect(init.code, init.stderr).toBe(0);
    const vendored = readdirSync(join(scaffold, 'vendor', 'trellis')).sort();
    expect(vendored).toEqual(manifests.map((m) => `${m.name.replace('@', '').replace('/', '-')}-${m.version}.tgz`).sort());
    const pkg = JSON.parse(readFileSync(join(scaffold, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@trellis/cli', '@trellis/core', '@trellis/db-sqlite', '@trellis/host']);
    for (const [name, spec] of Object.entries(pkg.dependencies)) expect(spec, name).toMatch(/^file:vendor\/trellis\/trellis-[a-z-]+-\d+\.\d+\.\d+\.tgz$/);
    // The packed tarball is the package: the same files as the one the test packed.
    expect(await tarballFiles(join(scaffold, 'vendor', 'trellis', `trellis-host-${manifests.find((m) => m.name === '@trellis/host')!.version}.tgz`))).toEqual(await tarballFiles(tarballOf('@trellis/host')));
  });

  it('scaffolds with `trellis init --from <tarballs>`, and the scaffold installs and starts by its own README', async () => {
    const scaffold = join(root, 'my-app');
    const init = await run('node', [trellisBin(), 'init', scaffold, '--from', tarballs], { cwd: root, env: npmEnv() });
    expect(init.code, init.stderr).toBe(0);
    const pkg = JSON.parse(readFileSync(join(scaffold, 'package.json'), 'utf8'));
    expect(pkg.dependencies['@trellis/host']).toMatch(/^file:vendor\/trellis\/trellis-host-.*\.tgz$/);
    // The README's "Run it" commands, run as written.
    const readme = readFileSync(join(scaffold, 'README.md'), 'utf8');
    const commands = /## Run it\s+```sh\n([\s\S]*?)```/.exec(readme)![1]!.trim().split('\n');
    expect(commands).toEqual(['npm install', 'npm start']);
    for (const command of commands.slice(0, -1)) await npm(command.split(' ').slice(1), scaffold);
    expect(installed(scaffold, '@trellis/cli')).toBe(true);
    expect(installed(scaffold, 'pg')).toBe(false);
    expect(installed(scaffold, 'ioredis')).toBe(false);
    // The optional driver is neither installed nor compiled; the default one is not compiled either.
    expect(installed(scaffold, 'better-sqlite3')).toBe(false);
    expect(compiled(scaffold, 'sqlite3')).toBe(false);
    const [npmCommand, ...args] = commands.at(-1)!.split(' ');
    const server = startServer(npmCommand!, args, { cwd: scaffold, env: npmEnv({ TRELLIS_PORT: '0' }) });
    servers.push(server);
    const [, url] = await server.waitFor(/is listening on (http:\/\/\S+) /);
    expect(await healthz(url!)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect((await fetch(`${url}/hello`)).status).toBe(200);
    await server.stop();

    // Adding an adapter is the one command its README gives: the vendored tarballs, whose own
    // @trellis/ai-sdk dependency (not on the registry) comes from vendor/ through `overrides`.
    const aiLine = readme.split('\n').find((line) => line.startsWith('npm install ') && line.includes('trellis-ai-openai-'))!;
    expect(aiLine).toMatch(/^npm install \.\/vendor\/trellis\/trellis-ai-openai-[\d.]+\.tgz \.\/vendor\/trellis\/trellis-ai-anthropic-[\d.]+\.tgz\s+#/);
    expect(readme).not.toMatch(/npm install @trellis\//);
    await npm(aiLine.replace(/\s+#.*$/, '').split(' ').slice(1), scaffold);
    const loaded = await run('node', ['--input-type=module', '-e', "const m = await import('@trellis/ai-openai'); console.log(typeof m.OpenAiProvider === 'function')"], { cwd: scaffold, env: npmEnv() });
    expect(loaded.stdout.trim(), loaded.stderr).toBe('true');
    expect(installed(scaffold, '@trellis/ai-sdk')).toBe(true);
  }, 600_000);
});
