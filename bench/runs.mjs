#!/usr/bin/env node
// Runs per second of a deployed three-block workflow (input → code → output) through
// POST /block/{bid}/api with `stream: false`, with p50/p99 latency, against a baseline: a bare
// JSON route of the same host answering the same request shape (what HTTP alone costs).
//
//   pnpm bench:runs-api             (builds the packages first)
//   node bench/runs.mjs [--connections 64] [--duration 10] [--transport uws|node] [--db sqlite,postgres]
//                       [--postgres-url postgres://...] [--redis-url redis://...] [--workers 1,2] [--credits-per-run 1]
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
// reported as skipped with the reason. Not a test: it prints figures and never fails on them.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from './lib.mjs';

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
  },
});
const connections = Number(args.connections);
const duration = Number(args.duration);
const warmup = Number(args.warmup);

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench:runs-api\` does).`);
    process.exit(1);
  }
}

const { coreModules, defineModule } = await import('@trellis/core');
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

async function inProcess() {
  const host = createHost({ config: config(), database: await database(), modules: [...coreModules, bareModule] });
  await host.start();
  try {
    const { token, projectId, blockId } = await deployWorkflow(host.url);
    await load(host.url, '/bench/bare-run', warmup);
    const bare = await load(host.url, '/bench/bare-run', duration);
    await load(host.url, `/block/${blockId}/api`, warmup);
    const before = (await json(host.url, 'GET', `/project/${projectId}/runs?size=1`, token)).total;
    const runs = await load(host.url, `/block/${blockId}/api`, duration);
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

const load1 = (await import('node:os')).loadavg()[0].toFixed(1);
console.log(`runs API bench (${args.transport} transport, ${databases.join(' then ')}, ${connections} connections, ${duration} s per figure, runs.concurrency ${args.concurrency}, runs.creditsPerRun ${args['credits-per-run']}, load average ${load1})\n`);
try {
  for (const name of databases) {
    db = name;
    results.length = 0;
    console.log(`${name}:`);
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
