#!/usr/bin/env node
// OAuth benchmark: refresh-token grants per second on Trellis's /oauth/token against
// oidc-provider 8 on a SQLite store with Trellis's durability settings (and, for reference, on
// its in-memory store), in interleaved rounds, medians reported. Every grant rotates the refresh
// token (both servers), so a grant is a read and several writes; `--concurrency` clients each
// follow their own refresh-token chain. The Trellis server also gets the usual burst of writes
// (mixed-writes.mjs) before it is measured.
//
//   pnpm build && node bench/oauth.mjs [--duration 10] [--warmup 3] [--concurrency 16] [--rounds 3] [--json out.json]
//       [--baseline /path/to/other/checkout]
//
// "grants/CPU-s" divides the grants by the server process's CPU time (all its threads, SQLite's
// included): it stays comparable when other work shares the machine, where grants/s does not.
// The ratio to oidc-provider is printed for both; the target (issue 14) is 2x on the same store.
// --baseline: another checkout of Trellis (built, with node_modules, on the same schema); its
// Trellis server runs interleaved with this tree's, on the same database, so "this tree / baseline"
// comes from the same run.
//
// Not a test: it prints figures and never fails on them.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, URLSearchParams } from 'node:url';
import { parseArgs } from 'node:util';
import { authorizationCodeGrant, BENCH_JWT_SECRET, prepareTrellisDatabase, writeBurst } from './mixed-writes.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'string' },
    baseline: { type: 'string' },
  },
});
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const concurrency = Number(args.concurrency);
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
else console.warn('! taskset or a second core is missing: server and clients share the CPU.');
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const targets = [
  { name: 'oidc-sqlite', label: 'oidc-provider 8, SQLite store (WAL, synchronous=FULL)', script: 'oidc-provider.mjs', env: { BENCH_OIDC_STORE: 'sqlite' } },
  { name: 'oidc-memory', label: 'oidc-provider 8, in-memory store', script: 'oidc-provider.mjs', env: { BENCH_OIDC_STORE: 'memory' } },
  { name: 'trellis', label: 'Trellis /oauth/token (uWS, SQLite), after writes', script: 'trellis-me.mjs', env: { BENCH_TRANSPORT: 'uws' }, trellis: true },
];
if (args.baseline) {
  const script = join(resolve(args.baseline), 'bench', 'servers', 'trellis-me.mjs');
  if (!existsSync(script)) {
    console.error(`--baseline: ${script} does not exist.`);
    process.exit(1);
  }
  targets.push({ name: 'trellis-baseline', label: 'baseline Trellis /oauth/token (uWS, SQLite), after writes', script, env: { BENCH_TRANSPORT: 'uws' }, trellis: true });
}

const dir = mkdtempSync(join(tmpdir(), 'trellis-oauth-bench-'));
try {
  const state = await prepareTrellisDatabase(join(dir, 'bench.db'));
  // One refresh-token chain per client; the first comes with the prepared database.
  const server = await start(targets[2], state.path);
  try {
    state.oauth.chains = [state.oauth.refreshToken];
    for (let i = 1; i < concurrency; i++) state.oauth.chains.push(await authorizationCodeGrant(`http://127.0.0.1:${server.port}`, state.oauth.clientId, state.writer.token));
  } finally {
    await server.stop();
  }
  console.log(`refresh-token grants: ${concurrency} clients, ${warmup} s warm-up + ${duration} s measured, ${rounds} interleaved round(s), Node ${process.version}${pinned ? ', server on core 0, clients on core 1' : ''}\n`);
  const samples = {};
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const sample = await measure(target, state);
      (samples[target.name] ??= []).push(sample);
      console.log(
        `  round ${round}  ${target.label.padEnd(58)} ${fmt(sample.perSecond)} grants/s ${fmt(sample.perCpuSecond)} grants/CPU-s   server CPU ${String(Math.round(sample.serverCpu * 100)).padStart(3)}%${sample.failed ? `   ${sample.failed} failed` : ''}   promise hooks ${sample.promiseHooks ? 'ON' : 'off'}`,
      );
    }
  }
  // Medians of each figure on its own (grants/s and grants/CPU-s need not come from one round).
  const median = (name, field) => {
    const sorted = samples[name].map((sample) => sample[field]).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  };
  console.log('\nMedian round:');
  for (const target of targets) console.log(`  ${target.label.padEnd(66)} ${fmt(median(target.name, 'perSecond'))} grants/s ${fmt(median(target.name, 'perCpuSecond'))} grants/CPU-s`);
  const ours = median('trellis', 'perSecond');
  const peer = median('oidc-sqlite', 'perSecond');
  const memory = median('oidc-memory', 'perSecond');
  const oursCpu = median('trellis', 'perCpuSecond');
  const peerCpu = median('oidc-sqlite', 'perCpuSecond');
  console.log(
    `\n  Trellis / oidc-provider on SQLite (target >= 2x): ${(ours / peer).toFixed(2)}x grants/s, ${(oursCpu / peerCpu).toFixed(2)}x grants/CPU-s   ${ours / peer >= 2 ? 'met' : 'NOT met'}`,
  );
  console.log(`  Trellis / oidc-provider in memory: ${(ours / memory).toFixed(2)}x grants/s, ${(oursCpu / median('oidc-memory', 'perCpuSecond')).toFixed(2)}x grants/CPU-s`);
  if (args.baseline) {
    console.log(
      `  this tree / baseline: ${(ours / median('trellis-baseline', 'perSecond')).toFixed(2)}x grants/s, ${(oursCpu / median('trellis-baseline', 'perCpuSecond')).toFixed(2)}x grants/CPU-s`,
    );
  }
  console.log(`  Load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const rows = [
    {
      work: 'refresh-token grant',
      trellis: `${Math.round(ours).toLocaleString('en-US')} grants/s (${Math.round(oursCpu).toLocaleString('en-US')}/CPU-s)`,
      peer: `oidc-provider 8, SQLite: ${Math.round(peer).toLocaleString('en-US')} grants/s (${Math.round(peerCpu).toLocaleString('en-US')}/CPU-s)`,
      ratio: ours / peer,
      goal: 2,
      met: ours / peer >= 2,
      note: `per CPU-second: ${(oursCpu / peerCpu).toFixed(2)}x; in memory: ${Math.round(memory).toLocaleString('en-US')}/s`,
    },
  ];
  if (args.json) writeFileSync(args.json, JSON.stringify({ rows, samples }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function measure(target, state) {
  const server = await start(target, state.path, target.trellis ? {} : { BENCH_TOKENS: String(concurrency) });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const path = target.trellis ? '/oauth/token' : '/token';
    const clientId = target.trellis ? state.oauth.clientId : server.info.clientId;
    const chains = target.trellis ? state.oauth.chains : server.info.tokens;
    if (target.trellis) {
      // The usual burst (login, edit, grant) goes through the first chain's holder: keep them apart.
      state.oauth.refreshToken = chains[0];
      await writeBurst(base, state, 'trellis');
      chains[0] = state.oauth.refreshToken;
    }
    await grants(server.port, path, clientId, chains, warmup);
    const cpuBefore = cpuSeconds(server.pid);
    const started = process.hrtime.bigint();
    const result = await grants(server.port, path, clientId, chains, duration);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = cpuSeconds(server.pid) - cpuBefore;
    return { perSecond: result.done / elapsed, perCpuSecond: cpu > 0 ? result.done / cpu : 0, failed: result.failed, serverCpu: cpu / elapsed, promiseHooks: await server.probe() };
  } finally {
    await server.stop();
  }
}

/** `chains.length` clients, each granting with its chain's refresh token and keeping the new one. */
async function grants(port, path, clientId, chains, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: chains.length });
  const until = Date.now() + seconds * 1000;
  let done = 0;
  let failed = 0;
  await Promise.all(
    chains.map(async (_, i) => {
      while (Date.now() < until) {
        const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: chains[i], client_id: clientId }).toString();
        const answer = await post(agent, port, path, body);
        if (answer.status !== 200) {
          failed++;
          if (failed === 1) console.warn(`! a grant failed: ${answer.status} ${answer.text.slice(0, 200)}`);
          return;
        }
        chains[i] = JSON.parse(answer.text).refresh_token;
        done++;
      }
    }),
  );
  agent.destroy();
  return { done, failed };
}

function fmt(value) {
  return String(Math.round(value)).padStart(6);
}

function post(agent, port, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

function start(target, db, extraEnv = {}) {
  const script = resolve(here, 'servers', target.script);
  const child = spawn(pinned ? 'taskset' : process.execPath, pinned ? ['-c', '0', process.execPath, script] : [script], {
    cwd: here,
    env: { ...process.env, BENCH_DB: db, BENCH_JWT_SECRET, ...target.env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'ignore'],
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
    next((m) => m.ready).then(({ port, ready: _ready, ...info }) =>
      resolve({
        port,
        info,
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
