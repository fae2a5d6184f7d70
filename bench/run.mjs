#!/usr/bin/env node
// `pnpm bench`: the rows of issue #14's table, each with Trellis, its peer from the same run, the
// ratio and the target, measured on servers that have handled writes.
//
// This script measures HTTP (GET /auth/me on Trellis's uWS and node:http transports, principal
// cache on and off, against a Fastify 5 peer doing the same work, a uWebSockets.js hello world as
// the ceiling and a node:http hello world as its reference) and JSON-RPC round trips on /v3/wss
// (against bare uWebSockets.js answering the same frames). Then it runs the other parts and
// prints the table: bench/oauth.mjs (refresh-token grants against oidc-provider 8),
// bench/documents.mjs (the 1 MB str_replace, when present) and bench/realtime-yjs.mjs (Yjs
// fan-out against Hocuspocus). Each server runs in its own process pinned to one core; the load generators (in this
// process) are pinned to another.
//
//   pnpm bench                      (builds the packages first)
//   node bench/run.mjs [--duration 10] [--warmup 3] [--connections 64] [--rounds 1] [--nice=-10] [--loader autocannon|wrk] [--only a,b] [--parts http,oauth,documents,yjs] [--json out.json]
//
// Writes (see mixed-writes.mjs): every Trellis and Fastify server gets a burst of writes before
// it is measured (logins, document edits, refresh-token grants; the peer's equivalents) and a
// side client keeps writing during the measured load (--write-rate, default 6/s). Three targets
// show the first write's cost: `*-fresh` (no write at all), `*-written` (the burst, then reads
// only) and the default (burst and writes during); fresh and written must match.
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
    parts: { type: 'string', default: 'http,oauth,documents,yjs' },
    'write-rate': { type: 'string', default: '6' },
    // JSON-RPC load: sockets and requests in flight per socket.
    sockets: { type: 'string', default: '32' },
    window: { type: 'string', default: '16' },
  },
});
const parts = new Set(args.parts.split(','));
const writeRate = Number(args['write-rate']);
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
const { default: WebSocket } = await import('ws');
const { BENCH_JWT_SECRET, prepareTrellisDatabase, startWriter, writeBurst } = await import('./mixed-writes.mjs');

// Cores: servers on SERVER_CORE, this process (the load generator) on LOAD_CORE.
const SERVER_CORE = '0';
const LOAD_CORE = '1';
const pinned = availableParallelism() >= 2 && hasTaskset();
if (args.nice !== undefined) setPriority(0, Number(args.nice));
if (pinned) execFileSync('taskset', ['-a', '-cp', LOAD_CORE, String(process.pid)], { stdio: 'ignore' });
else console.warn('! taskset or a second core is missing: server and load generator share the CPU; figures are not comparable.');

const JWT_SECRET = BENCH_JWT_SECRET;
// writes: 'none' (never written to), 'before' (a burst of writes, then reads only), 'during' (the
// burst, and the side client writing through the measured load). kind: which requests the side
// client sends ('trellis' or the Fastify 'peer's equivalents).
const trellis = { script: 'trellis-me.mjs', writer: 'trellis' };
const targets = [
  { name: 'uws-hello', label: 'uWebSockets.js hello world (ceiling)', script: 'uws-hello.mjs', path: '/auth/me' },
  { name: 'node-hello', label: 'node:http hello world', script: 'node-hello.mjs', path: '/auth/me' },
  { name: 'fastify', label: 'Fastify 5 GET /auth/me (jose + MikroORM, uncached), writes', script: 'fastify-me.mjs', path: '/auth/me', writer: 'peer', writes: 'during' },
  { name: 'fastify-fresh', label: 'Fastify 5 GET /auth/me, never written to', script: 'fastify-me.mjs', path: '/auth/me', writes: 'none', optional: true },
  { name: 'trellis-uws-cached-fresh', label: 'Trellis uWS GET /auth/me cached, never written to', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws' }, writes: 'none' },
  { name: 'trellis-uws-cached-written', label: 'Trellis uWS GET /auth/me cached, after writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws' }, writes: 'before' },
  { name: 'trellis-uws-cached-hooks', label: 'Trellis uWS GET /auth/me cached, promise hooks forced on', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws', BENCH_PROMISE_HOOKS: '1' }, writes: 'before', optional: true },
  { name: 'trellis-uws-cached', label: 'Trellis uWS GET /auth/me (principal cache 5 s, default), writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws' }, writes: 'during' },
  { name: 'trellis-uws-cached-60s', label: 'Trellis uWS GET /auth/me (principal cache 60 s), writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws', BENCH_PRINCIPAL_CACHE_MS: '60000' }, writes: 'during', optional: true },
  { name: 'trellis-uws-uncached', label: 'Trellis uWS GET /auth/me (principalCacheTtlMs 0), writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws', BENCH_PRINCIPAL_CACHE_MS: '0' }, writes: 'during' },
  { name: 'trellis-node-cached', label: 'Trellis node:http GET /auth/me (cache 5 s), writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'node' }, writes: 'during' },
  { name: 'trellis-node-uncached', label: 'Trellis node:http GET /auth/me (cache off), writes', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'node', BENCH_PRINCIPAL_CACHE_MS: '0' }, writes: 'during' },
  { name: 'trellis-mixed', label: 'Trellis uWS mixed: /auth/me (cached) + JSON-RPC + writes at once', ...trellis, path: '/auth/me', env: { BENCH_TRANSPORT: 'uws' }, mixed: true, writes: 'during' },
  { name: 'uws-rpc', label: 'uWebSockets.js answering the same JSON-RPC frames', script: 'uws-rpc.mjs', rpc: true },
  { name: 'trellis-rpc-fresh', label: 'Trellis /v3/wss JSON-RPC ping, never written to', ...trellis, env: { BENCH_TRANSPORT: 'uws' }, rpc: true, writes: 'none' },
  { name: 'trellis-rpc-written', label: 'Trellis /v3/wss JSON-RPC ping, after writes', ...trellis, env: { BENCH_TRANSPORT: 'uws' }, rpc: true, writes: 'before' },
  { name: 'trellis-rpc-hooks', label: 'Trellis /v3/wss JSON-RPC ping, promise hooks forced on', ...trellis, env: { BENCH_TRANSPORT: 'uws', BENCH_PROMISE_HOOKS: '1' }, rpc: true, writes: 'before', optional: true },
  { name: 'trellis-rpc', label: 'Trellis /v3/wss JSON-RPC ping, writes', ...trellis, env: { BENCH_TRANSPORT: 'uws' }, rpc: true, writes: 'during' },
].filter((t) => parts.has('http') && (args.only ? args.only.split(',').includes(t.name) : !t.optional));

const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
const dbPath = join(dir, 'bench.db');
const table = [];
try {
  if (targets.length > 0) {
    const state = await prepareTrellisDatabase(dbPath);
    console.log(`GET /auth/me: ${connections} connections (${args.loader}); JSON-RPC: ${args.sockets} sockets x ${args.window} in flight; ${warmup} s warm-up + ${duration} s measured per target; side writes ${writeRate}/s; Node ${process.version}${pinned ? `, servers on core ${SERVER_CORE}, load on core ${LOAD_CORE}` : ''}${args.nice !== undefined ? `, niceness ${args.nice}` : ''}\n`);
    const samples = {};
    let reference;
    for (let round = 1; round <= rounds; round++) {
      if (rounds > 1) console.log(`round ${round} of ${rounds} (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
      for (const target of targets) {
        const sample = await measure(target, state, (body) => {
          if (target.name.includes('hello')) return;
          // Every /auth/me answers the same document.
          reference ??= body;
          if (JSON.stringify(JSON.parse(body)) !== JSON.stringify(JSON.parse(reference))) throw new Error(`${target.name} answered a different body: ${body}`);
        });
        (samples[target.name] ??= []).push(sample);
        if (rounds > 1) console.log(`  ${line(target, sample)}`);
      }
    }
    const results = {};
    if (rounds > 1) console.log('\nMedian round:');
    for (const target of targets) {
      const sorted = [...samples[target.name]].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
      results[target.name] = { label: target.label, ...sorted[Math.floor(sorted.length / 2)], rounds: samples[target.name].map((s) => s.requestsPerSecond) };
      console.log(line(target, results[target.name]));
    }
    printRatios(results);
    table.push(...httpRows(results));
    if (args.json) writeFileSync(args.json, JSON.stringify({ loader: args.loader, connections, duration, rounds, node: process.version, pinned, results }, null, 2));
  }
  if (parts.has('oauth')) table.push(...(await runPart('oauth.mjs', ['--duration', String(duration), '--warmup', String(warmup), '--rounds', String(rounds)])));
  if (parts.has('documents')) {
    if (existsSync(join(here, 'documents.mjs'))) table.push(...(await runPart('documents.mjs', [])));
    else table.push({ work: 'str_replace on a 1 MB document (p50)', note: 'bench/documents.mjs is not here yet (the documents bench adds it)', target: '<= 20 ms SQLite, <= 40 ms PostgreSQL' });
  }
  if (parts.has('yjs')) {
    table.push(...(await runPart('realtime-yjs.mjs', ['--rounds', String(rounds)])));
  }
  printTable(table);
  console.log(`\nLoad average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on this machine skews figures; compare rounds).`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function measure(target, state, checkBody) {
  const trace = process.env.BENCH_TRACE ? (what) => console.error(`[${new Date().toISOString()}] ${target.name}: ${what}`) : () => undefined;
  const server = await startServer(target, dbPath);
  trace('started');
  const base = `http://127.0.0.1:${server.port}`;
  let writer;
  try {
    const token = state.token;
    if (target.rpc) {
      const pong = await loadRpc(server.port, token, 0.2);
      if (pong.total === 0 || pong.errors) throw new Error(`${target.name} did not answer JSON-RPC pings (${pong.errors} errors)`);
    } else {
      const check = await fetch(`${base}${target.path}`, { headers: { authorization: `Bearer ${token}` } });
      const body = await check.text();
      if (check.status !== 200) throw new Error(`${target.name} answered ${check.status}: ${body}`);
      checkBody(body);
    }
    const writes = target.writes ?? 'none';
    trace('checked');
    if (writes !== 'none') await writeBurst(base, state, target.writer);
    trace('written');
    if (warmup > 0) await load(target, server, token, warmup);
    if (writes === 'during') writer = startWriter(base, state, target.writer, writeRate);
    const cpuBefore = cpuSeconds(server.pid);
    const started = process.hrtime.bigint();
    const result = await load(target, server, token, duration);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = cpuSeconds(server.pid) - cpuBefore;
    trace('measured');
    const written = writer ? await writer.stop() : undefined;
    writer = undefined;
    return {
      requestsPerSecond: Math.round(result.requestsPerSecond),
      p50: result.p50,
      p99: result.p99,
      serverCpu: cpu / elapsed,
      requestsPerCpuSecond: cpu > 0 ? Math.round(result.total / cpu) : undefined,
      non2xx: result.non2xx,
      errors: result.errors,
      sideWrites: written?.sent,
      mix: result.mix,
      promiseHooks: await server.probe(),
      ...server.info,
    };
  } finally {
    await writer?.stop();
    await server.stop();
  }
}

async function load(target, server, token, seconds) {
  if (target.rpc) return loadRpc(server.port, token, seconds);
  if (target.mixed) {
    // Reads over HTTP and JSON-RPC calls over WebSockets at once (the side client writes).
    const [http, rpc] = await Promise.all([loadHttp(`http://127.0.0.1:${server.port}${target.path}`, { authorization: `Bearer ${token}` }, seconds), loadRpc(server.port, token, seconds)]);
    return { ...http, requestsPerSecond: http.requestsPerSecond + rpc.requestsPerSecond, total: http.total + rpc.total, errors: http.errors + rpc.errors, mix: { http: Math.round(http.requestsPerSecond), rpc: Math.round(rpc.requestsPerSecond) } };
  }
  const url = `http://127.0.0.1:${server.port}${target.path}`;
  return loadHttp(url, { authorization: `Bearer ${token}` }, seconds);
}

/**
 * JSON-RPC round trips: `--sockets` sockets (authenticated with `auth`, as Trellis clients do),
 * each keeping `--window` `ping` requests in flight; every answer sends the next one.
 */
async function loadRpc(port, token, seconds) {
  const url = `ws://127.0.0.1:${port}/v3/wss?token=${encodeURIComponent(token)}`;
  const open = () =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      ws.once('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token }, id: 1 })));
      ws.once('message', (data) => (String(data).includes('"authenticated"') ? resolve(ws) : reject(new Error(`auth failed: ${data}`))));
      ws.once('error', reject);
      ws.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
      ws.once('close', (code, reason) => reject(new Error(`socket closed before auth: ${code} ${reason}`)));
    });
  // A socket now and then closes (1006) before its auth answer under heavy machine load: retry it.
  const openRetrying = async (attempt = 1) => {
    try {
      return await open();
    } catch (error) {
      if (attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      return openRetrying(attempt + 1);
    }
  };
  const sockets = await Promise.all(Array.from({ length: Number(args.sockets) }, () => openRetrying()));
  for (const ws of sockets) ws.removeAllListeners('close');
  let answered = 0;
  let errors = 0;
  let running = true;
  for (const ws of sockets) {
    let id = 2;
    const ping = () => ws.send(`{"jsonrpc":"2.0","method":"ping","id":${id++}}`);
    ws.on('message', (data) => {
      if (data.includes('"pong"')) answered++;
      else errors++;
      if (running) ping();
    });
    for (let i = 0; i < Number(args.window); i++) ping();
  }
  const started = process.hrtime.bigint();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  running = false;
  const total = answered;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  await Promise.all(sockets.map((ws) => new Promise((resolve) => (ws.once('close', resolve), ws.terminate()))));
  return { requestsPerSecond: total / elapsed, total, p50: '-', p99: '-', non2xx: 0, errors };
}

/**
 * Runs another part of the bench (a script here) with `--json <file>`; answers its table rows.
 * The contract for a part (bench/oauth.mjs, bench/realtime-yjs.mjs, bench/documents.mjs): take
 * `--json <path>` and write `{ "rows": [{ work, trellis, peer, ratio, goal, goalText?, met, note? }] }`
 * there (`ratio` a number, >= `goal` when the target is met; or `{ work, note, target }` for a row
 * without a ratio), and exit 0.
 */
async function runPart(script, argv) {
  const out = join(dir, `${script}.json`);
  console.log(`\n--- ${script} ${'-'.repeat(80 - script.length)}`);
  await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, script), ...argv, '--json', out], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${script} exited with ${code}`))));
  });
  // A part that does not (yet) write rows still ran: its own output above has the figures.
  if (!existsSync(out)) return [{ work: script, note: `ran; it wrote no --json rows (its output above has the figures)` }];
  return JSON.parse(readFileSync(out, 'utf8')).rows ?? [];
}

/**
 * The rows of issue #14's table this script measures. When the peer's server did not use ~all of
 * its core (the load generator, one Node process, was the limit), requests/s compare load
 * generators, not servers: the row is then judged by requests per server CPU-second, and says so.
 */
function httpRows(results) {
  const rows = [];
  const rps = (name) => results[name]?.requestsPerSecond;
  const perCpu = (name) => results[name]?.requestsPerCpuSecond;
  const fmt = (n) => (n >= 10 ? n.toFixed(2) : n.toPrecision(2));
  const add = (work, ours, peer, unit, goal) => {
    if (!rps(ours) || !rps(peer)) return;
    const byThroughput = rps(ours) / rps(peer);
    const bound = (results[peer].serverCpu ?? 1) < 0.9 || (results[ours].serverCpu ?? 1) < 0.9;
    const byCpu = perCpu(ours) && perCpu(peer) ? perCpu(ours) / perCpu(peer) : undefined;
    const ratio = bound && byCpu !== undefined ? byCpu : byThroughput;
    const note = bound
      ? `judged per server CPU-second (${perCpu(ours).toLocaleString('en-US')} vs ${perCpu(peer).toLocaleString('en-US')}): the load generator, not the servers, set the throughput (${fmt(byThroughput)}x by ${unit}; server cores ${Math.round(results[ours].serverCpu * 100)}% and ${Math.round(results[peer].serverCpu * 100)}% busy)`
      : undefined;
    rows.push({ work, trellis: `${rps(ours).toLocaleString('en-US')} ${unit}`, peer: `${results[peer].label.split(',')[0]}: ${rps(peer).toLocaleString('en-US')} ${unit}`, ratio, goal, met: ratio >= goal, note });
  };
  add('GET /auth/me, no principal cache, after writes', 'trellis-uws-uncached', 'fastify', 'req/s', 2);
  add('GET /auth/me, cached, after writes', 'trellis-uws-cached', 'uws-hello', 'req/s', 1 / 3);
  add('GET /auth/me, cached: after writes / never written', 'trellis-uws-cached-written', 'trellis-uws-cached-fresh', 'req/s', 0.95);
  add('JSON-RPC round trips on /v3/wss, after writes', 'trellis-rpc', 'uws-rpc', 'calls/s', 1 / 2);
  add('JSON-RPC: after writes / never written', 'trellis-rpc-written', 'trellis-rpc-fresh', 'calls/s', 0.95);
  return rows;
}

function printTable(rows) {
  if (rows.length === 0) return;
  console.log('\nIssue #14 table (Trellis, its peer in the same run, ratio, target):');
  for (const row of rows) {
    if (row.ratio === undefined) {
      console.log(`  ${pad(row.work, 52)} ${row.trellis ? `${row.trellis}   ` : ''}target ${row.target ?? ''}   (${row.note})`);
      continue;
    }
    const goal = row.goalText ?? (row.goal < 1 ? `>= ${row.goal.toFixed(2)}x` : `>= ${row.goal}x`);
    console.log(`  ${pad(row.work, 52)} ${pad(row.trellis, 18, true)}   vs ${pad(row.peer, 48)} ${pad(`${row.ratio >= 0.1 ? row.ratio.toFixed(2) : row.ratio.toPrecision(2)}x`, 7, true)}   target ${pad(goal, 9)} ${row.met ? 'met' : 'NOT met'}${row.note ? `   (${row.note})` : ''}`);
  }
}

function line(target, r) {
  const label = target.label ?? target;
  const cpu = r.serverCpu === undefined ? '' : `   server CPU ${pad(Math.round(r.serverCpu * 100), 3, true)}%   ${pad((r.requestsPerCpuSecond ?? 0).toLocaleString('en-US'), 7, true)} /CPU-s`;
  const mix = r.mix ? `   (${r.mix.http.toLocaleString('en-US')} req/s + ${r.mix.rpc.toLocaleString('en-US')} calls/s)` : '';
  const extra = `${mix}${r.sideWrites !== undefined ? `   ${r.sideWrites} side writes` : ''}${r.promiseHooks === undefined ? '' : `   promise hooks ${r.promiseHooks ? 'ON' : 'off'}`}`;
  return `${pad(label, 64)} ${pad(r.requestsPerSecond.toLocaleString('en-US'), 7, true)} ${target.rpc ? 'calls/s' : target.mixed ? 'ops/s  ' : 'req/s  '}   p50 ${pad(r.p50, 3, true)} ms   p99 ${pad(r.p99, 3, true)} ms${cpu}${extra}${r.non2xx || r.errors ? `   (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`;
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
  const waiting = [];
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    out += chunk;
    let newline;
    while ((newline = out.indexOf('\n')) >= 0) {
      const text = out.slice(0, newline);
      out = out.slice(newline + 1);
      if (!text.startsWith('{')) continue;
      const message = JSON.parse(text);
      const at = waiting.findIndex((w) => w.match(message));
      if (at >= 0) waiting.splice(at, 1)[0].resolve(message);
    }
  });
  const next = (match) => new Promise((resolve) => waiting.push({ match, resolve }));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${target.name} exited with ${code} before it listened`)));
    next((m) => m.ready).then(({ port, ready: _ready, ...info }) =>
      resolve({
        port,
        info,
        // nice and taskset exec in place: the child's pid is the server's.
        pid: child.pid,
        /** Whether promise hooks are on in the server (servers/probe.mjs). */
        async probe() {
          const answer = next((m) => m.probe);
          child.kill('SIGUSR2');
          const timeout = new Promise((done) => setTimeout(() => done({ promiseHooks: undefined }), 2_000));
          return (await Promise.race([answer, timeout])).promiseHooks;
        },
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }),
      }),
    );
  });
}

/** Loads `url` for `seconds`: requests/s, p50 and p99 latency (ms), totals. */
function loadHttp(url, headers, seconds) {
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
    ['Trellis uWS, cache on: after writes / never written (1.00 = no cost from a write)', ratio('trellis-uws-cached-written', 'trellis-uws-cached-fresh')],
    ['Trellis uWS, cache on: promise hooks forced on / after writes', ratio('trellis-uws-cached-hooks', 'trellis-uws-cached-written')],
    ['Fastify: writes / never written', ratio('fastify', 'fastify-fresh')],
    ['Trellis JSON-RPC / raw uWS same frames (target >= 0.5)', ratio('trellis-rpc', 'uws-rpc')],
    ['Trellis JSON-RPC: after writes / never written (1.00 = no cost from a write)', ratio('trellis-rpc-written', 'trellis-rpc-fresh')],
    ['Trellis JSON-RPC: promise hooks forced on / after writes', ratio('trellis-rpc-hooks', 'trellis-rpc-written')],
  ];
  console.log('\nRatios (requests/s):');
  for (const [label, value] of lines) console.log(`  ${pad(label, 66)} ${value}`);
  const ceiling = results['uws-hello'];
  if (ceiling?.serverCpu !== undefined && ceiling.serverCpu < 0.9) {
    const perCpu = (name) => results[name]?.requestsPerCpuSecond;
    const cpuRatio = perCpu('trellis-uws-cached') && perCpu('uws-hello') ? `${(perCpu('trellis-uws-cached') / perCpu('uws-hello')).toPrecision(2)}x` : 'n/a';
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
