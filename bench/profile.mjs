#!/usr/bin/env node
// Profiles one bench server under load: runs it with --cpu-prof on one core, loads it from
// another, and prints the functions with the most self time. For finding hot spots, not figures.
//
//   node bench/profile.mjs [trellis-uws-cached|trellis-uws-uncached|trellis-node-cached|fastify|...] [seconds]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { selfTimes } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const [name = 'trellis-uws-cached', seconds = '8'] = process.argv.slice(2);
const scripts = {
  'uws-hello': ['uws-hello.mjs', {}],
  'node-hello': ['node-hello.mjs', {}],
  fastify: ['fastify-me.mjs', {}],
  'trellis-uws-cached': ['trellis-me.mjs', { BENCH_TRANSPORT: 'uws' }],
  'trellis-uws-uncached': ['trellis-me.mjs', { BENCH_TRANSPORT: 'uws', BENCH_PRINCIPAL_CACHE_MS: '0' }],
  'trellis-node-cached': ['trellis-me.mjs', { BENCH_TRANSPORT: 'node' }],
  'trellis-node-uncached': ['trellis-me.mjs', { BENCH_TRANSPORT: 'node', BENCH_PRINCIPAL_CACHE_MS: '0' }],
};
const [script, env] = scripts[name];
const { default: autocannon } = await import('autocannon');
const { coreModules, createKernel } = await import('@trellis/core');
const { sqliteDatabase } = await import('@trellis/db-sqlite');
execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const dir = mkdtempSync(join(tmpdir(), 'trellis-profile-'));
const secret = 'bench-secret-bench-secret-bench-secret-0123';
try {
  const db = join(dir, 'bench.db');
  const kernel = createKernel({ database: sqliteDatabase({ path: db }), modules: coreModules, config: { auth: { jwtSecret: secret }, log: { level: 'silent' } } });
  await kernel.start({ jobs: false });
  const registered = await kernel.http.handle({ method: 'POST', path: '/auth/register', query: '', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"email":"p@example.com","password":"correct horse battery"}'), remoteAddress: '' });
  const { token } = JSON.parse(registered.body);
  await kernel.stop();

  const child = spawn('taskset', ['-c', '0', process.execPath, '--cpu-prof', `--cpu-prof-dir=${dir}`, join(here, 'servers', script)], {
    env: { ...process.env, ...env, BENCH_DB: db, BENCH_JWT_SECRET: secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d).split('\n')[0]).port)));
  const result = await autocannon({ url: `http://127.0.0.1:${port}${process.env.BENCH_PATH ?? '/auth/me'}`, headers: { authorization: `Bearer ${token}` }, connections: 64, duration: Number(seconds) });
  console.log(`${name}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non2xx ${result.non2xx}`);
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const { total, self } = selfTimes(profile);
  const top = self.slice(0, Number(process.env.TOP ?? 30));
  for (const [key, t] of top) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
