#!/usr/bin/env node
// Runs per second of a deployed three-block workflow (input → code → output) through
// POST /block/{bid}/api with `stream: false`, with p50/p99 latency, against a baseline: a bare
// JSON route of the same host answering the same request shape (what HTTP alone costs).
//
//   pnpm bench:runs-api             (builds the packages first)
//   node bench/runs.mjs [--connections 64] [--duration 10] [--transport uws|node] [--db sqlite,postgres]
//                       [--postgres-url postgres://...] [--redis-url redis://...] [--workers 1,2] [--credits-per-run 1]
//                       [--parts runs,stream] [--chunks 10000] [--streams 1,4] [--stream-transports uws,node]
//                       [--stream-rounds 7] [--stream-warmup 30] [--threads] [--cpu-prof]
//
// The load generator (autocannon) runs in a process of its own, so the host's figures are the
// host's alone: "host CPU" is this process's CPU time per 2xx answer (every thread: the sandbox
// workers, the SQLite driver's and the garbage collector's threads), "main thread" its event
// loop's alone (Linux). On PostgreSQL, "DB CPU" is the CPU time of the database's backend
// processes serving the bench (read from /proc/<pid>/stat of the pids pg_stat_activity lists for
// the bench database; the server must run on this machine) per answer; with BullMQ, "workers" is
// the `trellis worker` processes' CPU per answer, and "host+workers" the sum the issue's target
// is about. `--db` takes a list: each database is measured in turn, in one run.
//
// Queue modes: `in-process` (the default RunQueue: the host executes its runs) always; with
// --redis-url and the `@trellis/queue-bullmq` adapter installed, also BullMQ with 1 and 2
// `trellis worker` processes (the host only accepts and streams). A mode that cannot run is
// reported as skipped with the reason.
//
// Streaming (`--parts stream`, or the default `--parts runs,stream`): issue 25's measure of a
// run's streamed events against an independent bare SSE server. A deployed workflow whose code
// block emits `--chunks` chunks (default 10,000: 10,005 events, 721 KiB of SSE) is run through
// POST /block/{bid}/api (stream, format sse: what a caller of a deployed block uses) on a host of
// each transport (`--stream-transports uws,node`), against bench/servers/bare-sse.mjs: a bare
// `node:http` server in a process of its own writing the very same bytes, one write per event.
// The reading client (bench/servers/stream-client.mjs) is a process of its own too; with
// `--streams 1,4` it reads 1 and then 4 streams at once. Rounds alternate run, bare, run, bare
// (`--stream-rounds`, after `--stream-warmup` unmeasured ones, default 30: a host's per-event
// code reaches its steady state, V8's optimizing tiers for the host's JavaScript and for the
// sandbox's WebAssembly, only after a few hundred thousand events, and with 3 rounds of warm-up
// its CPU per event was about 15 % higher; docs/runs.md), on each database of `--db`; it prints
// the median events/s of each, the ratio (target at least 0.8), the CPU time per event of the
// host (this process, every thread: the sandbox's worker, SQLite's, V8's) and of the bare
// server's process, and of each one's main thread, and of the reading client's process while it
// read each (Linux, from /proc/<pid>/task/<tid>/schedstat), and the time to the first bytes and
// to the end of the bodies. `--threads` adds the host's CPU
// per event by thread, `--cpu-prof` writes a .cpuprofile of the host's main thread over the
// measured rounds (idle while the bare server's ran) and prints the most self time. On a loaded
// machine compare the CPU figures: wall times swing from round to round (docs/runs.md, "Against
// an independent bare SSE server"). Last, the stream's floor: the emitting code alone in core's
// sandbox in this process (emits counted and dropped; nothing stored, framed or sent), its time
// and its emits/s as a share of the bare server's events/s with one stream: the most a run's
// stream could reach. Not a test: it prints figures and never fails on them.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Session } from 'node:inspector/promises';
import { request, selfTimes } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    connections: { type: 'string', default: '64' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    transport: { type: 'string', default: 'uws' },
    db: { type: 'string', default: 'sqlite' },
    'postgres-url': { type: 'string', default: process.env.TRELLIS_BENCH_POSTGRES_URL ?? '' },
    'redis-url': { type: 'string', default: process.env.TRELLIS_BENCH_REDIS_URL ?? '' },
    workers: { type: 'string', default: '1,2' },
    concurrency: { type: 'string', default: '64' },
    // runs.creditsPerRun: 1 is the product default; 0 skips the credit reservation of a run without LLM blocks (shows what billing costs).
    'credits-per-run': { type: 'string', default: '1' },
    parts: { type: 'string', default: 'runs,stream' },
    chunks: { type: 'string', default: '10000' },
    streams: { type: 'string', default: '1,4' },
    'stream-transports': { type: 'string', default: 'uws,node' },
    'stream-rounds': { type: 'string', default: '7' },
    'stream-warmup': { type: 'string', default: '30' },
    threads: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const connections = Number(args.connections);
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const parts = new Set(args.parts.split(',').map((part) => part.trim()));

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench:runs-api\` does).`);
    process.exit(1);
  }
}

const { coreModules, defineModule, QuickJsCodeSandbox } = await import('@trellis/core');
const databases = args.db.split(',').map((name) => name.trim()).filter(Boolean);
/** The database being measured (one of `databases`). */
let db = databases[0];

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS = 100;
/** CPU time (ms) of processes by pid, from /proc (a process that is gone counts 0). */
function processCpuMs(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Exited: its time is not counted (backends of the pool live as long as the host).
    }
  }
  return (ticks * 1000) / TICKS;
}

/** The CPU time (ms) of the PostgreSQL backends serving the bench database so far, or NaN on SQLite. */
async function databaseCpuMs() {
  if (db !== 'postgres') return Number.NaN;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: args['postgres-url'] });
  await client.connect();
  try {
    const { rows } = await client.query('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
    return processCpuMs(rows.map((r) => r.pid));
  } finally {
    await client.end();
  }
}
const { createHost } = await import('@trellis/host');

/** The baseline: a JSON route that reads the same body and answers a result-sized JSON. */
const bareModule = defineModule({
  name: 'bench-bare-json',
  routes: [
    {
      method: 'POST',
      path: '/bench/bare-run',
      auth: 'none',
      hidden: true,
      handler(ctx) {
        const n = Number(ctx.body?.inputs?.n ?? 0);
        return { runId: 'bare', documentId: null, status: 'completed', globalCtx: [], sessions: [], duration: 0, timedOut: false, output: `bench=${n * 2}`, error: null, waiting: null };
      },
    },
  ],
});

const dir = mkdtempSync(join(tmpdir(), 'trellis-runs-api-bench-'));

async function database() {
  if (db === 'postgres') {
    if (!args['postgres-url']) throw new Error('--db postgres needs --postgres-url (or TRELLIS_BENCH_POSTGRES_URL)');
    // Not a dependency of the bench package: loaded from the workspace's build.
    const { postgresDatabase } = await import(pathToFileURL(join(here, '..', 'packages', 'adapters', 'db-postgres', 'dist', 'index.js')).href);
    return postgresDatabase({ url: args['postgres-url'], pool: { min: 2, max: 10 } });
  }
  const { sqliteDatabase } = await import('@trellis/db-sqlite');
  return sqliteDatabase({ path: join(dir, 'bench.db') });
}

const config = (extra = {}) => ({
  server: { host: '127.0.0.1', port: 0, transport: args.transport },
  auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
  // Failed requests show up as non-2xx counts in the figures, not as log lines.
  log: { level: 'fatal' },
  // Every team starts with enough credits for the whole bench (each run reserves and settles).
  billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1_000_000_000, monthlyPrice: 0, yearlyPrice: 0 } } },
  runs: { concurrency: Number(args.concurrency), creditsPerRun: Number(args['credits-per-run']), ...extra },
});

/**
 * `request`, retried while the host sheds it (503 `overloaded`: the runs of the last load still
 * finishing at its admission limit), for up to a minute.
 */
async function json(...args) {
  for (let tries = 0; ; tries++) {
    try {
      return await request(...args);
    } catch (error) {
      if (tries >= 60 || !/: 503 /.test(String(error.message))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

const workflow = {
  type: 'doc',
  content: [
    { type: 'inputBlock', attrs: { id: 'in-n', name: 'n', type: 'number', required: true } },
    { type: 'codeBlock', attrs: { id: 'code-calc', name: 'calc', language: 'javascript' }, content: [{ type: 'text', text: 'return inputs.n * 2;' }] },
    { type: 'outputBlock', attrs: { id: 'out', name: 'out' }, content: [{ type: 'text', text: 'bench={{ calc }}' }] },
  ],
};

/**
 * Control flow: a loop over 50 items, 4 at a time, each iteration a code block (the sandbox) —
 * docs/runs.md, "Control flow". Measured beside the trivial workflow in the same process.
 */
const items = Array.from({ length: 50 }, (_, i) => i);
const loopWorkflow = {
  type: 'doc',
  content: [
    { type: 'inputBlock', attrs: { id: 'in-n', name: 'n', type: 'number', required: true } },
    { type: 'inputBlock', attrs: { id: 'in-xs', name: 'xs', type: 'array', default: items } },
    {
      type: 'loopBlock',
      attrs: { id: 'each', name: 'each', items: 'xs', concurrency: 4 },
      content: [{ type: 'codeBlock', attrs: { id: 'code-double', name: 'double', language: 'javascript' }, content: [{ type: 'text', text: 'return blocks.item * inputs.n;' }] }],
    },
    { type: 'outputBlock', attrs: { id: 'out', name: 'out' }, content: [{ type: 'text', text: '{{ each }}' }] },
  ],
};
const loopOutput = JSON.stringify(items.map((i) => i * 21));

/** A user, a project and the workflow deployed publicly: answers the block id. */
async function deployWorkflow(url, content = workflow, expected = 'bench=42') {
  const user = await json(url, 'POST', '/auth/register', undefined, { email: `bench-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery' });
  const project = await json(url, 'POST', '/project', user.token, { name: `bench ${Date.now()}`, tools: [], access: 'team' });
  const block = await json(url, 'POST', `/block/${project.id}`, user.token, { name: 'bench flow', type: 'workflow', content });
  await json(url, 'POST', `/block/${block.id}/deploy`, user.token, { access: 'public' });
  const check = await json(url, 'POST', `/block/${block.id}/api`, undefined, { stream: false, inputs: { n: 21 } });
  if (check.status !== 'completed' || (typeof check.output === 'string' ? check.output : JSON.stringify(check.output)) !== expected) throw new Error(`the workflow did not run: ${JSON.stringify(check)}`);
  return { token: user.token, projectId: project.id, blockId: block.id };
}

/**
 * A 3-level sub-workflow chain over the same workflow: parent (input → sub-workflow → output) →
 * child (the same) → the three-block workflow. Deployed publicly by the same user; answers the
 * parent's block id once a run of it gave the right output.
 */
async function deployChain(url, token, projectId, leafId) {
  const level = (name, target) => ({
    type: 'doc',
    content: [
      { type: 'inputBlock', attrs: { id: 'in-n', name: 'n', type: 'number', required: true } },
      { type: 'subworkflowBlock', attrs: { id: 'sub', name: 'sub', block: target, inputs: { n: '{{ n }}' } } },
      { type: 'outputBlock', attrs: { id: 'out', name: 'out' }, content: [{ type: 'text', text: '{{ sub }}' }] },
    ],
  });
  let target = leafId;
  for (const name of ['bench child', 'bench parent']) {
    const block = await json(url, 'POST', `/block/${projectId}`, token, { name, type: 'workflow', content: level(name, target) });
    await json(url, 'POST', `/block/${block.id}/deploy`, token, { access: 'public' });
    target = block.id;
  }
  const check = await json(url, 'POST', `/block/${target}/api`, undefined, { stream: false, inputs: { n: 21 } });
  if (check.status !== 'completed' || check.output !== 'bench=42') throw new Error(`the chain did not run: ${JSON.stringify(check)}`);
  return target;
}

/** CPU time of this process's main thread in ms (Linux: its schedstat, in ns), or NaN elsewhere. */
const mainSchedstat = `/proc/self/task/${process.pid}/schedstat`;
const mainThreadMs = existsSync(mainSchedstat) ? () => Number(readFileSync(mainSchedstat, 'utf8').split(' ')[0]) / 1e6 : () => Number.NaN;

/** autocannon in a process of its own (so the host's event loop and CPU figures are the host's alone): prints its result as JSON. */
const loader = `
const { default: autocannon } = await import('autocannon');
const options = JSON.parse(process.argv[1]);
autocannon(options, (error, result) => {
  if (error) { console.error(error); process.exit(1); }
  process.stdout.write(JSON.stringify({ requests: result.requests, latency: result.latency, non2xx: result.non2xx, errors: result.errors }));
});`;

/**
 * Loads `path` for `seconds` from a separate process; the answer carries `cpuMs` and `mainMs`:
 * the host process's CPU time per answer (every thread: the sandbox workers, the SQLite driver's
 * and the garbage collector's threads) and its main thread's alone.
 */
async function load(url, path, seconds, workerPids = [], conns = connections) {
  const dbBefore = await databaseCpuMs();
  const workersBefore = processCpuMs(workerPids);
  const result = await loadOnly(url, path, seconds, conns);
  const answers = completed(result);
  const dbMs = ((await databaseCpuMs()) - dbBefore) / answers;
  const workersMs = workerPids.length ? (processCpuMs(workerPids) - workersBefore) / answers : Number.NaN;
  // The requests still in flight when the load generator stopped end within about the slowest
  // answer's time: let them, so the next figure does not count their work.
  await new Promise((resolve) => setTimeout(resolve, Math.min(60_000, (result.latency.max ?? 0) + 500)));
  return Object.assign(result, { dbMs, workersMs });
}

/** The answers that were runs (2xx): a 503 `overloaded` costs the host little and would make the per-run figures look cheap. */
const completed = (result) => Math.max(1, result.requests.total - (result.non2xx ?? 0));

function loadOnly(url, path, seconds, conns = connections) {
  const options = { url: `${url}${path}`, method: 'POST', connections: conns, duration: seconds, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: false, inputs: { n: 21 } }), timeout: 60 };
  const cpu = process.cpuUsage();
  const main = mainThreadMs();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', loader, JSON.stringify(options)], { cwd: here, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the load generator exited with ${code}`));
      const used = process.cpuUsage(cpu);
      const result = JSON.parse(out);
      const answers = completed(result);
      resolve(Object.assign(result, { cpuMs: (used.user + used.system) / 1000 / answers, mainMs: (mainThreadMs() - main) / answers }));
    });
  });
}

/** 2xx answers per second of a measured load. */
const rate = (r) => completed(r) / duration;
const ms = (value) => (Number.isNaN(value) ? '    -' : value.toFixed(2).padStart(5));
const row = (label, r) =>
  `  ${label.padEnd(40)} ${Math.round(rate(r)).toLocaleString('en').padStart(8)} /s   p50 ${String(r.latency.p50).padStart(5)} ms   p99 ${String(r.latency.p99).padStart(5)} ms   host CPU ${ms(r.cpuMs)} ms/answer (main thread ${r.mainMs.toFixed(2)})   DB CPU ${ms(r.dbMs)}   workers ${ms(r.workersMs)}   host+workers ${ms(r.cpuMs + (Number.isNaN(r.workersMs) ? 0 : r.workersMs))}   ${r.non2xx || r.errors ? `(${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`;

const results = [];

/** With `--cpu-prof`, a profiler session on this process's main thread, started (else null). */
async function startProfile(intervalUs) {
  if (!args['cpu-prof']) return null;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return session;
}

/**
 * Stops a `startProfile` session, writes `<name>-<time>.cpuprofile` and prints where the main
 * thread's busy time went per `per` answers (1: in all), by package with `byPackage`, then the
 * functions with the most self time.
 */
async function stopProfile(session, name, { per = 1, byPackage = false } = {}) {
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  const file = `${name}-${Date.now()}.cpuprofile`;
  writeFileSync(file, JSON.stringify(profile));
  const { total, self } = selfTimes(profile);
  const busy = total - self.filter(([key]) => key.startsWith('(idle)')).reduce((sum, [, t]) => sum + t, 0);
  const unit = per === 1 ? 'ms' : 'ms/answer';
  const line = (key, t) => `    ${((100 * t) / busy).toFixed(1).padStart(5)}%  ${(t / 1000 / per).toFixed(per === 1 ? 1 : 3).padStart(7)} ${unit}  ${key}`;
  console.log(`  ${name}: profile ${file}, ${(busy / 1000 / per).toFixed(per === 1 ? 0 : 3)} ${unit} of the main thread not idle; ${byPackage ? 'by package, then ' : ''}most self time:`);
  if (byPackage) {
    const packages = new Map();
    for (const [key, t] of self) {
      if (key.startsWith('(idle)')) continue;
      const where = key.split(' ').slice(1).join(' ');
      const pkg = /^(@[^/]+\/[^/]+|[^/:]+)/.exec(where.replace(/^\.pnpm\/[^/]+\/node_modules\//, ''))?.[1] || '(native)';
      packages.set(pkg, (packages.get(pkg) ?? 0) + t);
    }
    for (const [pkg, t] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(line(pkg, t));
  }
  for (const [key, t] of self.filter(([key]) => !key.startsWith('(idle)')).slice(0, 30)) console.log(line(key, t));
}

/**
 * `--cpu-prof` and `--threads` for a measured load of runs: a .cpuprofile of the host's main thread
 * (its most self time printed, and by package) and the host's CPU per answer by thread.
 */
async function profiled(name, measure) {
  const session = await startProfile(200);
  const threadsBefore = args.threads ? perThreadMs(process.pid) : null;
  const result = await measure();
  if (threadsBefore) {
    const answers = completed(result);
    const byName = new Map();
    for (const [tid, { name: thread, ms }] of perThreadMs(process.pid)) {
      const key = thread.replace(/\d+$/, '#');
      byName.set(key, (byName.get(key) ?? 0) + (ms - (threadsBefore.get(tid)?.ms ?? 0)) / answers);
    }
    console.log(`  ${name}: host CPU ms per answer by thread: ${[...byName].sort((a, b) => b[1] - a[1]).filter(([, ms]) => ms >= 0.005).map(([key, ms]) => `${key} ${ms.toFixed(3)}`).join(', ')}`);
  }
  if (session) await stopProfile(session, name, { per: completed(result), byPackage: true });
  return result;
}

async function inProcess() {
  const host = createHost({ config: config(), database: await database(), modules: [...coreModules, bareModule] });
  await host.start();
  try {
    const { token, projectId, blockId } = await deployWorkflow(host.url);
    await load(host.url, '/bench/bare-run', warmup);
    const bare = await load(host.url, '/bench/bare-run', duration);
    await load(host.url, `/block/${blockId}/api`, warmup);
    const before = (await json(host.url, 'GET', `/project/${projectId}/runs?size=1`, token)).total;
    const runs = await profiled(`runs-${db}`, () => load(host.url, `/block/${blockId}/api`, duration));
    const after = (await json(host.url, 'GET', `/project/${projectId}/runs?size=1`, token)).total;
    results.push(['bare JSON route (baseline)', bare], ['POST /block/{bid}/api, in-process queue', runs]);
    // Control flow, beside the trivial run measured again at the same (fewer) connections: a
    // 50-item loop run does 50 sandbox calls, so at 64 connections most requests met the
    // admission limit (503) instead of running. Each chain holds three run slots at once (a
    // parent waits in its slot for its child): fewer connections than slots of one team / 3, or
    // the parents take every slot and wait for ever.
    const fewer = Math.max(1, Math.min(connections, Math.floor((Number(args.concurrency) * 3) / 4 / 3)));
    const loop = await deployWorkflow(host.url, loopWorkflow, loopOutput);
    const chainId = await deployChain(host.url, token, projectId, blockId);
    await load(host.url, `/block/${blockId}/api`, warmup, [], fewer);
    const trivial = await load(host.url, `/block/${blockId}/api`, duration, [], fewer);
    await load(host.url, `/block/${loop.blockId}/api`, warmup, [], fewer);
    const looped = await load(host.url, `/block/${loop.blockId}/api`, duration, [], fewer);
    await load(host.url, `/block/${chainId}/api`, warmup, [], fewer);
    const chain = await load(host.url, `/block/${chainId}/api`, duration, [], fewer);
    results.push([`trivial run, ${fewer} connections`, trivial], [`50-item loop (concurrency 4), ${fewer} conns`, looped], [`3-level sub-workflow chain, ${fewer} conns`, chain]);
    return { bare, runs, looped, stored: after - before, trivial, chain };
  } finally {
    await host.stop().catch(() => undefined);
  }
}

/** Starts `trellis worker` processes on the same database and Redis; resolves once each prints its ready line. */
function startWorkers(count, configFile, databaseUrl) {
  const bin = join(here, '..', 'packages', 'cli', 'dist', 'bin.js');
  if (!existsSync(bin)) throw new Error('packages/cli is not built');
  return Promise.all(
    Array.from({ length: count }, () => {
      const child = spawn(process.execPath, [bin, 'worker', '--config', configFile, '--database', databaseUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
      return new Promise((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (chunk) => (err += chunk));
        child.stdout.on('data', (chunk) => {
          if (String(chunk).includes('executing runs')) resolve(child);
        });
        child.once('exit', (code) => reject(new Error(`trellis worker exited with ${code}: ${err.trim().split('\n').slice(-3).join(' ')}`)));
      });
    }),
  );
}

async function bullmq(workers) {
  if (!args['redis-url']) return 'no --redis-url';
  if (db !== 'postgres' && db !== 'sqlite') return `unknown --db ${db}`;
  const prefix = `trellis-bench-${process.pid}-${workers}:`;
  const shared = config({ execute: false });
  const queueConfig = { ...shared, adapters: { queue: 'bullmq', redisUrl: args['redis-url'], redisPrefix: prefix } };
  let host;
  try {
    host = createHost({ config: queueConfig, database: await database(), modules: [...coreModules, bareModule] });
  } catch (error) {
    return `the host does not take adapters.queue "bullmq" yet (${String(error.message ?? error).split('\n')[0]})`;
  }
  const configFile = join(dir, `worker-${workers}.json`);
  const { server: _server, ...workerConfig } = queueConfig;
  writeFileSync(configFile, JSON.stringify({ ...workerConfig, runs: { ...workerConfig.runs, execute: true } }));
  const databaseUrl = db === 'postgres' ? args['postgres-url'] : `sqlite:${join(dir, 'bench.db')}`;
  let children = [];
  try {
    await host.start();
    children = await startWorkers(workers, configFile, databaseUrl);
    const { token, projectId, blockId } = await deployWorkflow(host.url);
    await load(host.url, `/block/${blockId}/api`, warmup);
    const before = (await json(host.url, 'GET', `/project/${projectId}/runs?size=1`, token)).total;
    const runs = await load(host.url, `/block/${blockId}/api`, duration, children.map((child) => child.pid));
    const after = (await json(host.url, 'GET', `/project/${projectId}/runs?size=1`, token)).total;
    return { runs, stored: after - before };
  } catch (error) {
    return String(error.message ?? error).split('\n')[0];
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)))));
    await host.stop().catch(() => undefined);
  }
}


/** CPU time in ms of a process (every thread) and of its main thread, from /proc/<pid>/task/<tid>/schedstat (Linux; NaN elsewhere). */
function threadsCpuMs(pid) {
  let all = 0;
  let main = Number.NaN;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const ms = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
        all += ms;
        if (tid === String(pid)) main = ms;
      } catch {
        // The thread ended meanwhile (its time is lost: a sandbox worker lives as long as its pool).
      }
    }
  } catch {
    return { all: Number.NaN, main: Number.NaN };
  }
  return { all, main };
}

/** `--threads`: CPU ms of each thread of a process, by thread id, with its name (Linux). */
function perThreadMs(pid) {
  const out = new Map();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = tid === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        out.set(tid, { name, ms: Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6 });
      } catch {
        // Ended meanwhile.
      }
    }
  } catch {
    // Not Linux.
  }
  return out;
}

/** A child process of this bench (`script` under bench/servers) talking over IPC; answers it once it printed its first line (parsed as JSON, or null without one). */
function child(script, argv = [], ipc = false) {
  const proc = spawn(process.execPath, [join(here, 'servers', script), ...argv], { cwd: here, stdio: ['ignore', 'pipe', 'inherit', ...(ipc ? ['ipc'] : [])] });
  return new Promise((resolve, reject) => {
    if (ipc) return proc.once('spawn', () => resolve({ proc, info: null }));
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve({ proc, info: JSON.parse(out.split('\n')[0]) });
    });
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

/** One round of the reading client: `streams` requests at once; answers its figures. */
function readRound(client, job) {
  return new Promise((resolve, reject) => {
    client.once('message', (answer) => (answer.error ? reject(new Error(answer.error)) : resolve(answer)));
    client.send(job);
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * The emitting code alone: the stream's code run in core's sandbox (the host's own, one worker),
 * its emits counted and dropped, nothing stored or written. A run's stream cannot end sooner than
 * this: its floor. Answers the median wall time of `rounds` runs and the emits of one.
 */
async function producerFloor(code, rounds) {
  const sandbox = new QuickJsCodeSandbox({ workers: 1 });
  try {
    const times = [];
    let emits = 0;
    for (let round = -warmup - 1; round < rounds; round++) {
      emits = 0;
      const started = performance.now();
      await sandbox.run({ code, globals: { inputs: {} }, timeoutMs: 600_000, memoryBytes: 64 * 1024 * 1024, onEmit: () => void emits++ });
      if (round >= 0) times.push(performance.now() - started);
    }
    return { ms: median(times), emits };
  } finally {
    await sandbox.close();
  }
}

/**
 * The issue's streaming measure (see the header): a run's SSE stream through POST /block/{bid}/api
 * on each transport against the independent bare server, with 1 and 4 streams at once.
 */
async function streaming() {
  const chunks = Number(args.chunks);
  const rounds = Math.max(1, Number(args['stream-rounds']));
  const streamWarmup = Math.max(0, Number(args['stream-warmup']));
  const streamCounts = args.streams.split(',').map(Number).filter((n) => n > 0);
  const code = `for (let i = 0; i < ${chunks}; i++) emit('chunk ' + i + ' ');\nreturn 'done';`;
  const emitter = { type: 'doc', content: [{ type: 'codeBlock', attrs: { id: 'c1', name: 'emitter', language: 'javascript' }, content: [{ type: 'text', text: code }] }] };
  const rows = [];
  const { proc: client } = await child('stream-client.mjs', [], true);
  let bare = null;
  try {
    for (const transport of args['stream-transports'].split(',').map((t) => t.trim())) {
      const host = createHost({ config: { ...config({ codeTimeoutMs: 600_000, maxTimeoutSeconds: 3600 }), server: { host: '127.0.0.1', port: 0, transport } }, database: await database(), modules: [...coreModules, bareModule] });
      await host.start();
      try {
        const user = await json(host.url, 'POST', '/auth/register', undefined, { email: `bench-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery' });
        const project = await json(host.url, 'POST', '/project', user.token, { name: `bench ${Date.now()}`, tools: [], access: 'team' });
        const block = await json(host.url, 'POST', `/block/${project.id}`, user.token, { name: 'stream bench', type: 'workflow', content: emitter });
        await json(host.url, 'POST', `/block/${block.id}/deploy`, user.token, { access: 'public' });
        const runJob = { url: `${host.url}/block/${block.id}/api`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: true, format: 'sse', inputs: {} }) };
        if (!bare) {
          // The bare server's bytes: one run's SSE body as this host streamed it.
          const response = await fetch(runJob.url, { method: 'POST', headers: runJob.headers, body: runJob.body });
          const text = await response.text();
          if (response.status !== 200 || !text.includes('event: run_complete')) throw new Error(`the streaming run failed: ${response.status} ${text.slice(-300)}`);
          const file = join(dir, 'frames.sse');
          writeFileSync(file, text);
          bare = await child('bare-sse.mjs', [file]);
        }
        const bareJob = { url: `http://127.0.0.1:${bare.info.port}/`, method: 'GET', headers: {}, body: undefined };
        for (const streams of streamCounts) {
          const figures = { run: [], bare: [] };
          let session = null;
          for (let round = -streamWarmup; round < rounds; round++) {
            if (round === 0) session = await startProfile(100);
            for (const [kind, job, pid] of [['run', runJob, process.pid], ['bare', bareJob, bare.proc.pid]]) {
              const threadsBefore = args.threads ? perThreadMs(pid) : null;
              // The client's /proc is read outside the host's measure (the host is this process).
              const clientBefore = threadsCpuMs(client.pid).all;
              const before = threadsCpuMs(pid);
              const answer = await readRound(client, { ...job, streams });
              const after = threadsCpuMs(pid);
              const clientMs = threadsCpuMs(client.pid).all - clientBefore;
              if (threadsBefore && round >= 0) {
                const sums = (figures.threads ??= { run: new Map(), bare: new Map() })[kind];
                for (const [tid, { name, ms }] of perThreadMs(pid)) {
                  const key = `${name} ${tid}`;
                  sums.set(key, (sums.get(key) ?? 0) + (ms - (threadsBefore.get(tid)?.ms ?? 0)) / answer.events);
                }
              }
              if (!answer.ok) throw new Error(`${kind} stream incomplete: ${answer.last}`);
              // The same events, and the same bytes but for the run's ids and timings.
              if (kind === 'bare' && (answer.events !== figures.runEvents || Math.abs(answer.bytes - figures.runBytes) > figures.runBytes / 100)) throw new Error(`the bare server wrote ${answer.events} events (${answer.bytes} bytes), the run ${figures.runEvents} (${figures.runBytes})`);
              if (kind === 'run') Object.assign(figures, { runBytes: answer.bytes, runEvents: answer.events });
              if (round >= 0) figures[kind].push({ first: answer.first, ms: answer.ms, rate: answer.events / (answer.ms / 1000), events: answer.events, cpu: (after.all - before.all) / answer.events, main: (after.main - before.main) / answer.events, client: clientMs / answer.events });
            }
          }
          const summary = (kind) => ({ first: median(figures[kind].map((f) => f.first)), ms: median(figures[kind].map((f) => f.ms)), rate: median(figures[kind].map((f) => f.rate)), cpu: median(figures[kind].map((f) => f.cpu)), main: median(figures[kind].map((f) => f.main)), client: median(figures[kind].map((f) => f.client)), min: Math.min(...figures[kind].map((f) => f.rate)), max: Math.max(...figures[kind].map((f) => f.rate)) });
          const ratios = figures.run.map((r, i) => r.rate / figures.bare[i].rate);
          // The host's main thread over the measured rounds (idle while the bare server's ran).
          if (session) await stopProfile(session, `runs-stream-${transport}-${streams}`);
          if (figures.threads) {
            console.log(`  ${transport}, ${streams} stream(s): CPU µs per event by thread (at least 0.05), run then bare`);
            for (const kind of ['run', 'bare']) {
              const list = [...figures.threads[kind]].map(([key, us]) => [key, (us * 1000) / rounds]).filter(([, us]) => us >= 0.05);
              console.log(`    ${kind}: ${list.map(([key, us]) => `${key} ${us.toFixed(2)}`).join(', ')}`);
            }
          }
          rows.push({ transport, streams, events: figures.run[0].events / streams, run: summary('run'), bare: summary('bare'), ratio: median(ratios), ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios) });
        }
      } finally {
        await host.stop().catch(() => undefined);
      }
    }
  } finally {
    client.disconnect();
    if (bare) bare.proc.kill('SIGTERM');
  }
  const us = (ms) => (ms * 1000).toFixed(2).padStart(6);
  const n = (v) => Math.round(v).toLocaleString('en').padStart(9);
  console.log(`  streamed events: POST /block/{bid}/api (stream, sse) vs an independent bare node:http SSE server, ${rows[0]?.events ?? 0} events a stream, median of ${rounds} rounds (load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')})`);
  console.log('  transport  streams   run events/s  bare events/s   ratio (min-max of rounds)   CPU µs/event: host  bare  host/bare   main thread: host  bare   reading client: run  bare   ms to first bytes, to the end: run  bare');
  for (const r of rows) {
    console.log(`  ${r.transport.padEnd(9)}  ${String(r.streams).padStart(7)}   ${n(r.run.rate)}      ${n(r.bare.rate)}       ${r.ratio.toFixed(2)} (${r.ratioMin.toFixed(2)}-${r.ratioMax.toFixed(2)})              ${us(r.run.cpu)} ${us(r.bare.cpu)}  ${(r.run.cpu / r.bare.cpu).toFixed(2).padStart(6)}x             ${us(r.run.main)} ${us(r.bare.main)}                 ${us(r.run.client)} ${us(r.bare.client)}   ${r.run.first.toFixed(1).padStart(29)} ${r.run.ms.toFixed(0).padStart(4)}  ${r.bare.first.toFixed(1)} ${r.bare.ms.toFixed(0)}`);
  }
  console.log('  target: a run\'s events/s at least 0.8 of the bare server\'s on both transports');
  // The floor a run's stream cannot beat: its producer alone, against the bare server's one stream.
  const floor = await producerFloor(code, rounds);
  const bareRate = median(rows.filter((r) => r.streams === 1).map((r) => r.bare.rate));
  const floorRate = floor.emits / (floor.ms / 1000);
  if (bareRate) console.log(`  the emitting code alone in the sandbox (its ${floor.emits.toLocaleString('en')} emits counted and dropped; nothing stored, framed or sent): ${floor.ms.toFixed(1)} ms a run, ${n(floorRate).trim()} emits/s, median of ${rounds}: ${(floorRate / bareRate).toFixed(2)} of the bare server's events/s with one stream, the most a run's stream could reach`);
}

const load1 = (await import('node:os')).loadavg()[0].toFixed(1);
console.log(`runs API bench (${args.transport} transport, ${databases.join(' then ')}, ${connections} connections, ${duration} s per figure, runs.concurrency ${args.concurrency}, runs.creditsPerRun ${args['credits-per-run']}, load average ${load1})\n`);
try {
  for (const name of databases) {
    db = name;
    results.length = 0;
    console.log(`${name}:`);
    if (parts.has('stream')) {
      await streaming();
      console.log('');
    }
    if (!parts.has('runs')) continue;
    const { bare, runs, looped, stored, trivial, chain } = await inProcess();
    for (const [label, r] of results) console.log(row(label, r));
    console.log(`\n  50-item loop / trivial run (same connections): host CPU per run ${(looped.cpuMs / trivial.cpuMs).toFixed(1)}x, ${((looped.cpuMs - trivial.cpuMs) / 50).toFixed(3)} ms per iteration beyond the trivial run; runs/s ${(rate(looped) / rate(trivial)).toFixed(2)}`);
    console.log(`\n  runs stored during the measure: ${stored.toLocaleString('en')} (autocannon counted ${runs.requests.total.toLocaleString('en')} answers)`);
    console.log(`  runs / bare route: ${(rate(runs) / rate(bare)).toFixed(3)}   targets: PostgreSQL in process at most 2 ms host CPU and 1 ms DB CPU per run; SQLite no worse`);
    console.log(`  3-level chain / trivial run (same connections): host CPU per run ${(chain.cpuMs / trivial.cpuMs).toFixed(2)}x (three runs each, so about 3x is the floor), runs/s ${(rate(chain) / rate(trivial)).toFixed(2)}`);
    for (const count of args.workers.split(',').map(Number).filter(Boolean)) {
      const outcome = await bullmq(count);
      if (typeof outcome === 'string') console.log(`  BullMQ with ${count} worker(s): skipped (${outcome})`);
      else {
        console.log(row(`POST /block/{bid}/api, BullMQ, ${count} worker(s)`, outcome.runs));
        console.log(`    runs stored: ${outcome.stored.toLocaleString('en')}; runs / in-process: ${(rate(outcome.runs) / rate(runs)).toFixed(2)}   target: at most 4 ms host+workers CPU per run`);
      }
    }
    console.log('');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
