#!/usr/bin/env node
// HTTP benchmark: GET /auth/me on Trellis (uWS and node:http transports, principal cache on and
// off) against a Fastify 5 peer doing the same work, with a uWebSockets.js hello-world as the
// ceiling and a node:http hello-world as its reference. Each server runs in its own process
// pinned to one core; the load generator (autocannon, in this process) is pinned to another.
//
//   pnpm bench                      (builds the packages first)
//   node bench/run.mjs [--duration 10] [--warmup 3] [--connections 64] [--rounds 1] [--nice=-10] [--loader autocannon|wrk] [--only a,b] [--json out.json]
//
// With --rounds N every target runs N times, interleaved, and the median round is reported.
// "server CPU" is the share of its core the server process used while measured: below ~90% the
// load generator (one Node process on one core) is the limit, not the server. "req/CPU-s" is
// requests per second of server CPU time, which compares servers even then.
//
// autocannon (one Node process on one core) tops out below what the uWS hello world can answer;
// with it the ceiling is the load generator's, and the runner says so. `--loader wrk` uses wrk
// (a C load generator, `apt-get install wrk`) instead.
//
// Not a test: it prints figures and never fails on them.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    only: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    // A negative niceness (root only) keeps other work on a shared machine from skewing figures.
    nice: { type: 'string' },
    // autocannon (default, a bench dependency) or wrk (if installed: a C load generator, for
    // when one Node process cannot load the fastest servers fully).
    loader: { type: 'string', default: 'autocannon' },
    json: { type: 'string' },
  },
});
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const connections = Number(args.connections);
const rounds = Math.max(1, Number(args.rounds));

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench\` does).`);
    process.exit(1);
  }
}

// Servers still running when this process ends (an error midway) are stopped with it.
const liveServers = new Set();
process.on('exit', () => {
  for (const child of liveServers) child.kill('SIGKILL');
});

const { default: autocannon } = await import('autocannon');
const { coreModules, createKernel } = await import('@trellis/core');
const { sqliteDatabase } = await import('@trellis/db-sqlite');

// Cores: servers on SERVER_CORE, this process (the load generator) on LOAD_CORE.
const SERVER_CORE = '0';
const LOAD_CORE = '1';
const pinned = availableParallelism() >= 2 && hasTaskset();
if (args.nice !== undefined) setPriority(0, Number(args.nice));
if (pinned) execFileSync('taskset', ['-a', '-cp', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
else console.warn('! taskset or a second core is missing: server and load generator share the CPU; figures are not comparable.');

const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const targets = [
  { name: 'uws-hello', label: 'uWebSockets.js hello world (ceiling)', script: 'uws-hello.mjs', path: '/auth/me' },
  { name: 'node-hello', label: 'node:http hello world', script: 'node-hello.mjs', path: '/auth/me' },
  { name: 'fastify', label: 'Fastify 5 GET /auth/me (jose + MikroORM, uncached)', script: 'fastify-me.mjs', path: '/auth/me' },
  { name: 'trellis-uws-cached', label: 'Trellis uWS GET /auth/me (principal cache 5 s, default)', script: 'trellis-me.mjs', path: '/auth/me', env: { BENCH_TRANSPORT: 'uws' } },
  { name: 'trellis-uws-cached-60s', label: 'Trellis uWS GET /auth/me (principal cache 60 s)', script: 'trellis-me.mjs', path: '/auth/me', env: { BENCH_TRANSPORT: 'uws', BENCH_PRINCIPAL_CACHE_MS: '60000' }, optional: true },
  { name: 'trellis-uws-uncached', label: 'Trellis uWS GET /auth/me (principalCacheTtlMs 0)', script: 'trellis-me.mjs', path: '/auth/me', env: { BENCH_TRANSPORT: 'uws', BENCH_PRINCIPAL_CACHE_MS: '0' } },
  { name: 'trellis-node-cached', label: 'Trellis node:http GET /auth/me (principal cache 5 s, default)', script: 'trellis-me.mjs', path: '/auth/me', env: { BENCH_TRANSPORT: 'node' } },
  { name: 'trellis-node-uncached', label: 'Trellis node:http GET /auth/me (principalCacheTtlMs 0)', script: 'trellis-me.mjs', path: '/auth/me', env: { BENCH_TRANSPORT: 'node', BENCH_PRINCIPAL_CACHE_MS: '0' } },
].filter((t) => (args.only ? args.only.split(',').includes(t.name) : !t.optional));

const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
const dbPath = join(dir, 'bench.db');
try {
  const token = await prepareDatabase(dbPath);
  console.log(`GET /auth/me, ${connections} connections, ${warmup} s warm-up + ${duration} s measured per target, Node ${process.version}${pinned ? `, servers on core ${SERVER_CORE}, ${args.loader} on core ${LOAD_CORE}` : ''}${args.nice !== undefined ? `, niceness ${args.nice}` : ''}\n`);
  const samples = {};
  let reference;
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) console.log(`round ${round} of ${rounds} (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
    for (const target of targets) {
      const sample = await measure(target, token, (body) => {
        if (target.name.includes('hello')) return;
        // Every /auth/me answers the same document.
        reference ??= body;
        if (JSON.stringify(JSON.parse(body)) !== JSON.stringify(JSON.parse(reference))) throw new Error(`${target.name} answered a different body: ${body}`);
      });
      (samples[target.name] ??= []).push(sample);
      if (rounds > 1) console.log(`  ${line(target.label, sample)}`);
    }
  }
  const results = {};
  if (rounds > 1) console.log('\nMedian round:');
  for (const target of targets) {
    const sorted = [...samples[target.name]].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    results[target.name] = { label: target.label, ...sorted[Math.floor(sorted.length / 2)], rounds: samples[target.name].map((s) => s.requestsPerSecond) };
    console.log(line(target.label, results[target.name]));
  }
  printRatios(results);
  console.log(`\nLoad average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on this machine skews figures; compare rounds).`);
  if (args.json) writeFileSync(args.json, JSON.stringify({ loader: args.loader, connections, duration, rounds, node: process.version, pinned, results }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function measure(target, token, checkBody) {
  const server = await startServer(target, dbPath);
  try {
    const url = `http://127.0.0.1:${server.port}${target.path}`;
    const headers = { authorization: `Bearer ${token}` };
    const check = await fetch(url, { headers });
    const body = await check.text();
    if (check.status !== 200) throw new Error(`${target.name} answered ${check.status}: ${body}`);
    checkBody(body);
    if (warmup > 0) await load(url, headers, warmup);
    const cpuBefore = cpuSeconds(server.pid);
    const started = process.hrtime.bigint();
    const result = await load(url, headers, duration);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = cpuSeconds(server.pid) - cpuBefore;
    return {
      requestsPerSecond: Math.round(result.requestsPerSecond),
      p50: result.p50,
      p99: result.p99,
      serverCpu: cpu / elapsed,
      requestsPerCpuSecond: cpu > 0 ? Math.round(result.total / cpu) : undefined,
      non2xx: result.non2xx,
      errors: result.errors,
      ...server.info,
    };
  } finally {
    await server.stop();
  }
}

function line(label, r) {
  const cpu = r.serverCpu === undefined ? '' : `   server CPU ${pad(Math.round(r.serverCpu * 100), 3, true)}%   ${pad((r.requestsPerCpuSecond ?? 0).toLocaleString('en-US'), 7, true)} req/CPU-s`;
  return `${pad(label, 62)} ${pad(r.requestsPerSecond.toLocaleString('en-US'), 7, true)} req/s   p50 ${pad(r.p50, 3, true)} ms   p99 ${pad(r.p99, 3, true)} ms${cpu}${r.non2xx || r.errors ? `   (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`;
}

/** User + system CPU seconds a process (all its threads) has used, from /proc. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Migrates a fresh SQLite file and registers one user through Trellis itself; returns its JWT. */
async function prepareDatabase(path) {
  const kernel = createKernel({
    database: sqliteDatabase({ path }),
    modules: coreModules,
    config: { auth: { jwtSecret: JWT_SECRET }, log: { level: 'silent' } },
  });
  await kernel.start({ jobs: false });
  try {
    const response = await kernel.http.handle({
      method: 'POST',
      path: '/auth/register',
      query: '',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ email: 'bench@example.com', password: 'correct horse battery' })),
      remoteAddress: '127.0.0.1',
    });
    if (response.status !== 201) throw new Error(`registering the bench user failed: ${response.status} ${response.body}`);
    return JSON.parse(response.body).token;
  } finally {
    await kernel.stop();
  }
}

function startServer(target, db) {
  const script = join(here, 'servers', target.script);
  let command = pinned ? 'taskset' : process.execPath;
  let argv = pinned ? ['-c', SERVER_CORE, process.execPath, script] : [script];
  if (args.nice !== undefined) {
    argv = ['-n', args.nice, command, ...argv];
    command = 'nice';
  }
  const child = spawn(command, argv, {
    cwd: here,
    env: { ...process.env, BENCH_DB: db, BENCH_JWT_SECRET: JWT_SECRET, ...target.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  liveServers.add(child);
  child.once('exit', () => liveServers.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      child.stdout.off('data', onData);
      child.stdout.resume();
      const { port, ready: _ready, ...info } = JSON.parse(line);
      resolve({
        port,
        info,
        // nice and taskset exec in place: the child's pid is the server's.
        pid: child.pid,
        stop: () =>
          new Promise((done) => {
            child.once('exit', () => done());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }),
      });
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${target.name} exited with ${code} before it listened`)));
  });
}

/** Loads `url` for `seconds`: requests/s, p50 and p99 latency (ms), totals. */
function load(url, headers, seconds) {
  return args.loader === 'wrk' ? loadWithWrk(url, headers, seconds) : loadWithAutocannon(url, headers, seconds);
}

function loadWithAutocannon(url, headers, seconds) {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections, duration: seconds, pipelining: 1 }, (error, result) =>
      error
        ? reject(error)
        : resolve({
            requestsPerSecond: result.requests.average,
            p50: result.latency.p50,
            p99: result.latency.p99,
            total: result.requests.total,
            non2xx: result.non2xx,
            errors: result.errors + result.timeouts,
          }),
    );
  });
}

function loadWithWrk(url, headers, seconds) {
  const argv = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
  for (const [name, value] of Object.entries(headers)) argv.push('-H', `${name}: ${value}`);
  return new Promise((resolve, reject) => {
    // Inherits this process's core.
    const child = spawn('wrk', [...argv, url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited with ${code}: ${out}`));
      try {
        resolve(readWrk(out));
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** Reads requests/s, p50, p99 and totals from wrk's --latency report. */
function readWrk(out) {
  const ms = (text) => {
    const match = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '');
    if (!match) throw new Error(`cannot read a wrk latency from ${JSON.stringify(text)} in:\n${out}`);
    return Number(match[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2]];
  };
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]),
    p50: Number(ms(/^ +50% +(\S+)$/m.exec(out)?.[1]).toFixed(2)),
    p99: Number(ms(/^ +99% +(\S+)$/m.exec(out)?.[1]).toFixed(2)),
    total: Number(/(\d+) requests in/.exec(out)[1]),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

function printRatios(results) {
  const rps = (name) => results[name]?.requestsPerSecond;
  const ratio = (a, b) => (rps(a) && rps(b) ? `${(rps(a) / rps(b)).toFixed(2)}x` : 'n/a');
  const lines = [
    ['uWS hello / node:http hello', ratio('uws-hello', 'node-hello')],
    ['Trellis uWS, cache on  / Fastify (target >= 2x)', ratio('trellis-uws-cached', 'fastify')],
    ['Trellis uWS, cache off / Fastify (like for like, both uncached)', ratio('trellis-uws-uncached', 'fastify')],
    ['Trellis uWS, cache on  / uWS hello ceiling (target >= 0.33)', ratio('trellis-uws-cached', 'uws-hello')],
    ['Trellis uWS, cache off / uWS hello ceiling', ratio('trellis-uws-uncached', 'uws-hello')],
    ['Trellis uWS / Trellis node:http, cache on', ratio('trellis-uws-cached', 'trellis-node-cached')],
    ['Trellis uWS / Trellis node:http, cache off', ratio('trellis-uws-uncached', 'trellis-node-uncached')],
    ['Trellis node:http, cache off / Fastify', ratio('trellis-node-uncached', 'fastify')],
  ];
  console.log('\nRatios (requests/s):');
  for (const [label, value] of lines) console.log(`  ${pad(label, 66)} ${value}`);
  const ceiling = results['uws-hello'];
  if (ceiling?.serverCpu !== undefined && ceiling.serverCpu < 0.9) {
    const perCpu = (name) => results[name]?.requestsPerCpuSecond;
    const cpuRatio = perCpu('trellis-uws-cached') && perCpu('uws-hello') ? `${(perCpu('trellis-uws-cached') / perCpu('uws-hello')).toFixed(2)}x` : 'n/a';
    console.log(
      `\nNote: the uWS hello world used ${Math.round(ceiling.serverCpu * 100)}% of its core: the load generator, not the server, set that ceiling, so ratios to it are too kind.` +
        `\n  By requests per server CPU-second, Trellis uWS (cache on) / uWS hello = ${cpuRatio}. \`--loader wrk\` (apt package wrk) loads the ceiling fully.`,
    );
  }
}

function pad(value, width, right = false) {
  const text = String(value);
  return right ? text.padStart(width) : text.padEnd(width);
}

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
