#!/usr/bin/env node
// Realtime benchmark: how many authenticated JSON-RPC sockets one Trellis process holds and what
// each costs in memory, and how fast a push fans out to 1,000 clients of one user, compared in the
// same run with bare uWebSockets.js (every socket subscribed to one topic, `app.publish`).
//
//   pnpm build && node bench/realtime.mjs [--sockets 10000] [--clients 1000] [--pushes 200] [--payload 64] [--rounds 3] [--only a,b]
//
// Targets: `trellis-uws` and `trellis-node` (the reference host on each transport, every core
// module, SQLite, the push API going through the in-process PubSub) and `uws-raw`. Each server
// runs in its own process (with --expose-gc, pinned to core 0 when taskset exists); the clients
// (`ws`) run here, pinned to core 1. Memory is the server's after a full GC, before and after
// opening the sockets. Fan-out time runs from the push command to the last client receiving the
// last push; with one client process the clients can be the limit, so the server's own CPU time
// per delivered message is printed too (it compares servers even then).
//
// BENCH_VERBOSE=1 prints every fan-out round; BENCH_CPU_PROF_DIR=<dir> runs the servers with
// --cpu-prof into that directory.
//
// Not a test: it prints figures and never fails on them.
import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    sockets: { type: 'string', default: '10000' },
    clients: { type: 'string', default: '1000' },
    pushes: { type: 'string', default: '200' },
    payload: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});
const socketCount = Number(args.sockets);
const clientCount = Number(args.clients);
const pushCount = Number(args.pushes);
const payload = 'x'.repeat(Number(args.payload));
const rounds = Math.max(1, Number(args.rounds));

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first.`);
    process.exit(1);
  }
}

const pinned = availableParallelism() >= 2 && hasTaskset();
if (pinned) execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
else console.warn('! taskset or a second core is missing: servers and clients share the CPU.');

const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const targets = [
  { name: 'uws-raw', label: 'uWebSockets.js, app.publish (baseline)', script: 'uws-raw.mjs', env: {} },
  { name: 'trellis-uws', label: 'Trellis, uWS transport', script: 'trellis.mjs', env: { BENCH_TRANSPORT: 'uws' } },
  { name: 'trellis-node', label: 'Trellis, node:http + ws transport', script: 'trellis.mjs', env: { BENCH_TRANSPORT: 'node' } },
].filter((t) => !args.only || args.only.split(',').includes(t.name));

const dir = mkdtempSync(join(tmpdir(), 'trellis-realtime-bench-'));
const results = new Map();
try {
  console.log(`realtime bench: ${socketCount} sockets for memory; ${clientCount} clients x ${pushCount} pushes of ${payload.length}-byte content, ${rounds} round(s)\n`);
  for (const target of targets) {
    results.set(target.name, { label: target.label, memory: await measureMemory(target), fanout: await measureFanout(target) });
  }
  report();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// --- phases ------------------------------------------------------------------------------------

async function measureMemory(target) {
  const server = await startServer(target, `${target.name}-memory.db`);
  try {
    const auth = await credentials(server, target);
    const before = await server.ask({ cmd: 'memory' });
    const started = performance.now();
    const sockets = await openSockets(server.port, socketCount, auth);
    const openMs = performance.now() - started;
    const after = await server.ask({ cmd: 'memory' });
    await closeSockets(sockets);
    const delta = (field) => (after.memory[field] - before.memory[field]) / socketCount;
    return {
      held: after.connections,
      openMs,
      rssPerSocket: delta('rss'),
      heapPerSocket: delta('heapUsed'),
      externalPerSocket: delta('external'),
      rssTotal: after.memory.rss,
    };
  } finally {
    await server.stop();
  }
}

async function measureFanout(target) {
  const server = await startServer(target, `${target.name}-fanout.db`);
  try {
    const auth = await credentials(server, target);
    const sockets = await openSockets(server.port, clientCount, auth);
    const runs = [];
    await fanOut(server, sockets, 10, auth.userId); // warm-up
    for (let round = 0; round < rounds; round++) {
      runs.push(await fanOut(server, sockets, pushCount, auth.userId));
      if (process.env.BENCH_VERBOSE) console.error(target.name, 'round', round, JSON.stringify(runs.at(-1)));
    }
    await closeSockets(sockets);
    runs.sort((a, b) => a.wallMs - b.wallMs);
    return runs[Math.floor(runs.length / 2)];
  } finally {
    await server.stop();
  }
}

/** Pushes `count` messages to every socket; resolves when each socket has received all of them. */
async function fanOut(server, sockets, count, userId) {
  let pending = sockets.length;
  let resolveAll;
  const all = new Promise((resolve) => (resolveAll = resolve));
  for (const ws of sockets) {
    let received = 0;
    ws.removeAllListeners('message');
    ws.on('message', () => {
      if (++received === count && --pending === 0) resolveAll();
    });
  }
  const cpuBefore = (await server.ask({ cmd: 'cpu' })).cpu;
  const started = performance.now();
  const pushed = server.ask({ cmd: 'push', count, userId, payload });
  const watchdog = setTimeout(() => console.error(`! fan-out stalled: ${pending} of ${sockets.length} clients still waiting`), 30_000);
  await all;
  clearTimeout(watchdog);
  const wallMs = performance.now() - started;
  const publishMs = (await pushed).cpuMicros;
  const cpuAfter = (await server.ask({ cmd: 'cpu' })).cpu;
  const serverCpuMs = (cpuAfter.user - cpuBefore.user + cpuAfter.system - cpuBefore.system) / 1000;
  const deliveries = count * sockets.length;
  return {
    wallMs,
    deliveries,
    perSecond: deliveries / (wallMs / 1000),
    serverCpuMs,
    serverMicrosPerDelivery: (serverCpuMs * 1000) / deliveries,
    publishCallCpuMs: (publishMs.user + publishMs.system) / 1000,
  };
}

// --- servers and clients -----------------------------------------------------------------------

async function startServer(target, dbName) {
  const child = fork(join(here, 'realtime-servers', target.script), [], {
    env: { ...process.env, ...target.env, BENCH_DB: join(dir, dbName), BENCH_JWT_SECRET: JWT_SECRET },
    execArgv: ['--expose-gc', ...(process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (pinned) execFileSync('taskset', ['-a', '-cp', '0', String(child.pid)], { stdio: 'ignore' });
  const waiting = [];
  child.on('message', (message) => waiting.shift()?.(message));
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const ready = await next();
  return {
    port: ready.port,
    ask(command) {
      const answer = next();
      child.send(command);
      return answer;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A user and its JWT on a Trellis server; nothing for the raw baseline (it accepts anyone). */
async function credentials(server, target) {
  if (target.script !== 'trellis.mjs') return { path: '/', token: 'none', userId: 'none' };
  const response = await fetch(`http://127.0.0.1:${server.port}/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'correct horse battery' }),
  });
  const body = await response.json();
  return { path: '/v3/wss', token: body.token, userId: body.user.id };
}

/** Opens `count` sockets (at most 200 handshakes at a time), each authenticated before it counts. */
async function openSockets(port, count, auth) {
  const url = `ws://127.0.0.1:${port}${auth.path}?token=${encodeURIComponent(auth.token)}`;
  const sockets = [];
  const request = JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token: auth.token }, id: 1 });
  const openOne = () =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      ws.once('open', () => ws.send(request));
      ws.once('message', (data) => {
        if (!String(data).includes('"authenticated"')) reject(new Error(`auth failed: ${data}`));
        else resolve(ws);
      });
      ws.once('error', reject);
    });
  for (let i = 0; i < count; i += 200) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(200, count - i) }, openOne))));
  }
  return sockets;
}

async function closeSockets(sockets) {
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve) => {
          ws.once('close', resolve);
          ws.terminate();
        }),
    ),
  );
}

// --- report ------------------------------------------------------------------------------------

function report() {
  const kb = (bytes) => `${(bytes / 1024).toFixed(2)} KB`;
  const pad = (text, width) => String(text).padEnd(width);
  const padL = (text, width) => String(text).padStart(width);
  console.log(`Sockets held by one process (${socketCount} authenticated sockets, memory after a full GC)`);
  console.log(`${pad('target', 38)}${padL('held', 8)}${padL('open s', 9)}${padL('RSS/socket', 13)}${padL('heap/socket', 13)}${padL('ext/socket', 12)}${padL('RSS total', 12)}`);
  for (const { label, memory } of results.values()) {
    console.log(
      `${pad(label, 38)}${padL(memory.held, 8)}${padL((memory.openMs / 1000).toFixed(1), 9)}${padL(kb(memory.rssPerSocket), 13)}${padL(kb(memory.heapPerSocket), 13)}${padL(kb(memory.externalPerSocket), 12)}${padL(`${(memory.rssTotal / 1048576).toFixed(0)} MB`, 12)}`,
    );
  }
  console.log(`\nPush fan-out to ${clientCount} clients of one user, ${pushCount} pushes (median of ${rounds})`);
  console.log(`${pad('target', 38)}${padL('wall ms', 10)}${padL('deliveries/s', 14)}${padL('server CPU ms', 15)}${padL('µs/delivery', 13)}`);
  for (const { label, fanout } of results.values()) {
    console.log(
      `${pad(label, 38)}${padL(fanout.wallMs.toFixed(0), 10)}${padL(Math.round(fanout.perSecond).toLocaleString('en-US'), 14)}${padL(fanout.serverCpuMs.toFixed(0), 15)}${padL(fanout.serverMicrosPerDelivery.toFixed(2), 13)}`,
    );
  }
  const raw = results.get('uws-raw');
  if (raw) {
    console.log('\nRatios against bare uWebSockets.js (higher = Trellis costs more)');
    for (const [name, { label, memory, fanout }] of results) {
      if (name === 'uws-raw') continue;
      console.log(
        `${pad(label, 38)} RSS/socket x${(memory.rssPerSocket / raw.memory.rssPerSocket).toFixed(1)}   fan-out wall time x${(fanout.wallMs / raw.fanout.wallMs).toFixed(2)}   server CPU/delivery x${(fanout.serverMicrosPerDelivery / raw.fanout.serverMicrosPerDelivery).toFixed(2)}`,
      );
    }
  }
}

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
