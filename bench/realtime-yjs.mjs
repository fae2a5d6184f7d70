#!/usr/bin/env node
// Yjs fan-out: server CPU per delivered update, Trellis's collaboration channel (/v3/collab,
// the y-websocket protocol, on uWS) against Hocuspocus 3.4.4, in interleaved rounds. One writer
// client types `--updates` single-character edits into a Y.Text; `--clients` other clients of the
// same document receive each one. A delivery is one update reaching one client; the figure is the
// server process's CPU time over the deliveries (the clients run here, on another core, so their
// own cost does not count). The Trellis server has handled writes first (mixed-writes.mjs).
//
//   pnpm build && node bench/realtime-yjs.mjs [--clients 100] [--updates 200] [--rounds 3] [--json out.json]
//
// Not a test: it prints figures and never fails on them.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HocuspocusProvider } from '@hocuspocus/provider';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { BENCH_JWT_SECRET, json, prepareTrellisDatabase, writeBurst } from './mixed-writes.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '100' },
    updates: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'string' },
  },
});
const clientCount = Number(args.clients);
const updateCount = Number(args.updates);
const rounds = Math.max(1, Number(args.rounds));

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first.`);
    process.exit(1);
  }
}
// cpus(), not availableParallelism(): pnpm bench runs this pinned to one core already.
const pinned = cpus().length >= 2 && hasTaskset();
if (pinned) execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
// Each y-websocket provider adds a process 'exit' listener.
process.setMaxListeners(0);
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const targets = [
  { name: 'hocuspocus', label: 'Hocuspocus 3.4.4', script: 'hocuspocus.mjs' },
  { name: 'trellis', label: 'Trellis /v3/collab (uWS), after writes', script: 'trellis-me.mjs', env: { BENCH_TRANSPORT: 'uws' }, trellis: true },
];

const dir = mkdtempSync(join(tmpdir(), 'trellis-yjs-bench-'));
try {
  const state = await prepareTrellisDatabase(join(dir, 'bench.db'));
  console.log(`Yjs fan-out: 1 writer + ${clientCount} clients of one document, ${updateCount} updates, ${rounds} interleaved round(s), Node ${process.version}${pinned ? ', server on core 0, clients on core 1' : ''}\n`);
  const samples = {};
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const sample = await measure(target, state, round);
      (samples[target.name] ??= []).push(sample);
      console.log(`  round ${round}  ${target.label.padEnd(40)} ${sample.microsPerDelivery.toFixed(2).padStart(7)} µs server CPU per delivery   ${Math.round(sample.deliveriesPerSecond).toLocaleString('en-US').padStart(9)} deliveries/s   promise hooks ${sample.promiseHooks ? 'ON' : 'off'}`);
    }
  }
  const median = (name) => [...samples[name]].sort((a, b) => a.microsPerDelivery - b.microsPerDelivery)[Math.floor(samples[name].length / 2)];
  const ours = median('trellis').microsPerDelivery;
  const peer = median('hocuspocus').microsPerDelivery;
  console.log(`\n  Trellis / Hocuspocus, server CPU per delivery (target <= 0.5): ${(ours / peer).toFixed(2)}x   (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  const rows = [
    {
      work: 'Yjs fan-out, server CPU per delivery',
      trellis: `${ours.toFixed(2)} µs`,
      peer: `Hocuspocus 3.4.4: ${peer.toFixed(2)} µs`,
      // Lower is better here: the ratio shown is Hocuspocus's cost over Trellis's.
      ratio: peer / ours,
      goal: 2,
      goalText: '>= 2x less',
      met: peer / ours >= 2,
    },
  ];
  if (args.json) writeFileSync(args.json, JSON.stringify({ rows, samples }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
// Destroyed providers may still hold a reconnect timer.
process.exit(0);

async function measure(target, state, round) {
  const server = await start(target, state.path);
  const clients = [];
  try {
    const base = `http://127.0.0.1:${server.port}`;
    let connect;
    if (target.trellis) {
      await writeBurst(base, state, 'trellis');
      const project = await json(base, 'POST', '/project', { token: state.writer.token, body: { name: `Yjs ${round}`, tools: [], access: 'team' } }, 201);
      const document = await json(base, 'POST', '/documents', { token: state.writer.token, body: { projectId: project.id, title: 'Yjs' } }, 201);
      connect = (ydoc) => new WebsocketProvider(`ws://127.0.0.1:${server.port}/v3/collab`, document.id, ydoc, { params: { token: state.writer.token }, WebSocketPolyfill: WebSocket, disableBc: true });
    } else {
      // One socket per client (the provider makes its own), as with y-websocket.
      connect = (ydoc) => new HocuspocusProvider({ url: `ws://127.0.0.1:${server.port}`, WebSocketPolyfill: WebSocket, name: `bench-${round}`, document: ydoc });
    }
    const open = async () => {
      const ydoc = new Y.Doc();
      const provider = connect(ydoc);
      clients.push(provider);
      await new Promise((resolve) => {
        if (provider.synced) return resolve();
        provider.on('synced', resolve);
        provider.on('sync', (synced) => synced && resolve());
      });
      return ydoc;
    };
    const writer = await open();
    const receivers = [];
    for (let i = 0; i < clientCount; i += 20) receivers.push(...(await Promise.all(Array.from({ length: Math.min(20, clientCount - i) }, open))));
    const text = writer.getText('body');
    const expected = text.length + updateCount;
    const all = Promise.all(
      receivers.map(
        (ydoc) =>
          new Promise((resolve) => {
            const t = ydoc.getText('body');
            const check = () => t.length >= expected && (ydoc.off('update', check), resolve());
            ydoc.on('update', check);
            check();
          }),
      ),
    );
    const cpuBefore = cpuSeconds(server.pid);
    const started = process.hrtime.bigint();
    for (let i = 0; i < updateCount; i++) {
      text.insert(text.length, 'x');
      // One update per macrotask, as typing produces them.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const watchdog = setTimeout(() => console.error(`! ${target.name}: the fan-out stalled`), 60_000);
    await all;
    clearTimeout(watchdog);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = cpuSeconds(server.pid) - cpuBefore;
    const deliveries = updateCount * clientCount;
    return { microsPerDelivery: (cpu * 1e6) / deliveries, deliveriesPerSecond: deliveries / elapsed, cpuSeconds: cpu, promiseHooks: await server.probe() };
  } finally {
    for (const provider of clients) provider.destroy();
    await server.stop();
  }
}

function start(target, db) {
  const script = join(here, 'servers', target.script);
  const child = spawn(pinned ? 'taskset' : process.execPath, pinned ? ['-c', '0', process.execPath, script] : [script], {
    cwd: here,
    env: { ...process.env, BENCH_DB: db, BENCH_JWT_SECRET, ...target.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
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
    next((m) => m.ready).then(({ port }) =>
      resolve({
        port,
        pid: child.pid,
        async probe() {
          const answer = next((m) => m.probe);
          child.kill('SIGUSR2');
          return (await Promise.race([answer, new Promise((done) => setTimeout(() => done({}), 2_000))])).promiseHooks;
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

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
