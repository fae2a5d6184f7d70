#!/usr/bin/env node
// Hot paths of issue 14: the refresh-token grant (POST /oauth/token, grant_type=refresh_token) and
// uncached GET /auth/me (principalCacheTtlMs 0: every request verifies the JWT and reads the user),
// on the reference host (createHost, node:http transport, a SQLite file in WAL mode with
// synchronous=FULL), for each SQLite driver, and against a baseline build when given one.
//
//   pnpm build && node bench/hot-paths.mjs [--duration 5] [--warmup 2] [--rounds 3] [--connections 16]
//       [--drivers sqlite3,better-sqlite3] [--baseline /path/to/other/checkout]
//
// --baseline: another checkout of Trellis (built, with node_modules) holding a copy of this
// script; its servers run interleaved with this tree's, so "after / before" ratios come from one
// run. Each refresh connection rotates its own token family (a grant consumes the token the next
// one presents). Figures are medians over interleaved rounds; "per CPU-s" divides the answers by
// the server process's CPU time, which stays comparable when other work shares the machine.
// Prints figures and ratios; never fails on them.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join, resolve } from 'node:path';
import { fileURLToPath, URLSearchParams } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from './lib.mjs';

const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'boolean', default: false },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    drivers: { type: 'string', default: 'sqlite3,better-sqlite3' },
    baseline: { type: 'string' },
  },
});

if (args.serve) await serve();
else await main();

/** The server process: a host on a fresh SQLite file, a user, an OAuth app and token families. */
async function serve() {
  const { createHost } = await import('@trellis/host');
  const { UserService } = await import('@trellis/core');
  const { BENCH_DB, BENCH_DRIVER, BENCH_FAMILIES = '16' } = process.env;
  const url = BENCH_DRIVER ? `sqlite:${BENCH_DB}?driver=${BENCH_DRIVER}` : `sqlite:${BENCH_DB}`;
  const host = createHost({
    config: {
      server: { host: '127.0.0.1', port: 0, transport: 'node' },
      database: { url },
      auth: { jwtSecret: JWT_SECRET, principalCacheTtlMs: 0, rateLimit: { perIp: 1e9, perAccount: 1e9 } },
      oauth: { rateLimit: { perIp: 1e9, perClient: 1e9 } },
      log: { level: 'error' },
    },
  });
  await host.start();
  const base = `http://127.0.0.1:${host.port}`;
  const json = (method, path, body, token) => request(base, method, path, token, body);
  const user = await json('POST', '/auth/register', { email: `bench-${Date.now()}@example.com`, password: 'correct horse battery staple' });
  await host.kernel.get(UserService).update(host.kernel.fork(), user.user.id, { isSiteAdmin: true });
  const app = await json('POST', '/admin/oauth-apps', { name: 'Bench', description: 'bench', redirect_uris: [REDIRECT_URI], scopes: ['profile:read'] }, user.token);
  const refreshTokens = [];
  for (let i = 0; i < Number(BENCH_FAMILIES); i++) {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const confirmed = await json(
      'POST',
      '/oauth/authorize',
      { client_id: app.client_id, redirect_uri: REDIRECT_URI, scope: 'profile:read', state: 'bench-state', code_challenge: challenge, code_challenge_method: 'S256' },
      user.token,
    );
    const code = new URL(confirmed.redirectTo).searchParams.get('code');
    const response = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: app.client_id, redirect_uri: REDIRECT_URI, code_verifier: verifier }),
    });
    if (response.status !== 200) throw new Error(`code exchange: ${response.status} ${await response.text()}`);
    refreshTokens.push((await response.json()).refresh_token);
  }
  process.stdout.write(`${JSON.stringify({ ready: true, port: host.port, jwt: user.token, clientId: app.client_id, refreshTokens })}\n`);
  process.on('SIGTERM', () => void host.stop().then(() => process.exit(0)));
}

async function main() {
  const { default: autocannon } = await import('autocannon');
  const duration = Number(args.duration);
  const warmup = Number(args.warmup);
  const rounds = Math.max(1, Number(args.rounds));
  const connections = Number(args.connections);
  const trees = [{ name: 'this tree', script: fileURLToPath(import.meta.url) }];
  if (args.baseline) trees.push({ name: 'baseline', script: join(resolve(args.baseline), 'bench', 'hot-paths.mjs') });
  const targets = [];
  for (const tree of trees) {
    for (const driver of args.drivers.split(',')) {
      // The baseline runs once, on its own default driver (sqlite3), compared with the first driver listed.
      if (tree.name === 'baseline' && driver !== args.drivers.split(',')[0]) continue;
      targets.push({ ...tree, driver: tree.name === 'baseline' ? undefined : driver, label: `${tree.name}${tree.name === 'baseline' ? '' : `, ${driver}`}` });
    }
  }
  const workloads = ['refresh grant', 'GET /auth/me uncached'];
  console.log(`Hot paths: ${connections} connections, ${warmup} s warm-up + ${duration} s per target and workload, ${rounds} interleaved rounds, Node ${process.version}, load average ${fmtLoad()}\n`);
  const samples = new Map();
  for (let round = 1; round <= rounds; round++) {
    console.log(`round ${round} of ${rounds} (load average ${fmtLoad()})`);
    for (const target of targets) {
      const server = await start(target, connections);
      try {
        for (const workload of workloads) {
          const sample = workload === 'refresh grant' ? await refreshLoad(autocannon, server, connections, warmup, duration) : await meLoad(autocannon, server, connections, warmup, duration);
          const key = `${workload} | ${target.label}`;
          if (!samples.has(key)) samples.set(key, []);
          samples.get(key).push(sample);
          console.log(`  ${key.padEnd(48)} ${fmt(sample)}`);
        }
      } finally {
        server.stop();
      }
    }
  }
  console.log('\nMedians:');
  const medians = new Map();
  for (const [key, list] of samples) {
    const sorted = [...list].sort((a, b) => a.perSecond - b.perSecond);
    const cpuSorted = [...list].sort((a, b) => a.perCpuSecond - b.perCpuSecond);
    const median = { ...sorted[Math.floor(sorted.length / 2)], perCpuSecond: cpuSorted[Math.floor(cpuSorted.length / 2)].perCpuSecond };
    medians.set(key, median);
    console.log(`  ${key.padEnd(48)} ${fmt(median)}`);
  }
  console.log('\nRatios (median answers/s; median answers per server CPU-s):');
  for (const workload of workloads) {
    const reference = targets[0];
    const ours = medians.get(`${workload} | ${reference.label}`);
    for (const other of targets.slice(1)) {
      const theirs = medians.get(`${workload} | ${other.label}`);
      console.log(`  ${workload}: ${reference.label} / ${other.label} = ${(ours.perSecond / theirs.perSecond).toFixed(2)}x; per CPU-s ${(ours.perCpuSecond / theirs.perCpuSecond).toFixed(2)}x`);
    }
  }
  console.log(`\nLoad average at the end: ${fmtLoad()} (the machine is shared; compare ratios within this run).`);
}

function fmtLoad() {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

function fmt(sample) {
  return `${String(Math.round(sample.perSecond)).padStart(7)}/s  p50 ${String(sample.p50).padStart(4)} ms  ${String(Math.round(sample.perCpuSecond)).padStart(7)} per CPU-s  server CPU ${(sample.cpu * 100).toFixed(0)}%${sample.errors ? `  ${sample.errors} errors/non-2xx` : ''}`;
}

async function start(target, families) {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-hot-'));
  const child = spawn(process.execPath, [target.script, '--serve'], {
    env: { ...process.env, BENCH_DB: join(dir, 'bench.db'), BENCH_FAMILIES: String(families), ...(target.driver ? { BENCH_DRIVER: target.driver } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise((resolvePromise, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const line = buffer.split('\n').find((l) => l.startsWith('{"ready"'));
      if (line) resolvePromise(JSON.parse(line));
    });
    child.on('exit', (code) => reject(new Error(`${target.label} server exited with ${code}`)));
  });
  return {
    ...info,
    pid: child.pid,
    stop() {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** User plus system CPU seconds of a process (Linux /proc). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measured(server, run) {
  const before = cpuSeconds(server.pid);
  const started = process.hrtime.bigint();
  const result = await run();
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = cpuSeconds(server.pid) - before;
  return {
    perSecond: result.requests.total / elapsed,
    p50: result.latency.p50,
    perCpuSecond: cpu > 0 ? result.requests.total / cpu : 0,
    cpu: cpu / elapsed,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

function meLoad(autocannon, server, connections, warmup, duration) {
  const options = { url: `http://127.0.0.1:${server.port}/auth/me`, headers: { authorization: `Bearer ${server.jwt}` }, connections, pipelining: 1 };
  const run = (seconds) => new Promise((ok, fail) => autocannon({ ...options, duration: seconds }, (error, result) => (error ? fail(error) : ok(result))));
  return (async () => {
    if (warmup > 0) await run(warmup);
    return measured(server, () => run(duration));
  })();
}

/**
 * Refresh grants: one worker per connection, each with its own token family, presenting the
 * refresh token its previous grant answered, so every request is a real rotation (autocannon
 * resets its per-connection context between requests, so it cannot carry the token along).
 */
function refreshLoad(_autocannon, server, connections, warmup, duration) {
  const pool = server.refreshTokens;
  const url = `http://127.0.0.1:${server.port}/oauth/token`;
  const run = async (seconds) => {
    const end = Date.now() + seconds * 1000;
    const latencies = [];
    let errors = 0;
    await Promise.all(
      Array.from({ length: connections }, async (_, family) => {
        while (Date.now() < end) {
          const started = performance.now();
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: pool[family], client_id: server.clientId }),
          });
          const text = await response.text();
          latencies.push(performance.now() - started);
          if (response.status === 200) pool[family] = JSON.parse(text).refresh_token;
          else {
            errors++;
            if (process.env.BENCH_DEBUG) console.error(response.status, text);
            return;
          }
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return { requests: { total: latencies.length - errors }, latency: { p50: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0) }, errors, timeouts: 0, non2xx: 0 };
  };
  return (async () => {
    if (warmup > 0) await run(warmup);
    return measured(server, () => run(duration));
  })();
}
