#!/usr/bin/env node
// Mixed load on one host, as real hosts see it (issue #23): idle authenticated WebSockets held
// open while an open-loop generator offers a fixed rate of mixed requests, step after step.
//
// The mix (by weight, out of 20; bench/mixed-load-generator.mjs):
//   reads  10/20  GET /auth/me (3), GET /documents/{id}/content of 20 documents (4),
//                 GET /tool/vdb/{class}?limit=10 (3)
//   writes  4/20  POST /documents (2), POST /tool/vdb/{class} (a record, embedded) (2)
//   runs    2/20  POST /block/{bid}/api, stream false: a deployed input → code → output workflow
//   vector  2/20  POST /tool/vdb/{class}/vector, limit 10, over a --records collection (100,000)
//   conversation sends 2/20  POST /conversation/{id}/messages to one of 200 conversations with no turn
//                 under way (a send finding all busy counts as dropped), answered by a
//                 fake OpenAI-compatible model in the generator process
//
// The idle sockets are spread over 100 other users (a user's pushes reach all of their sockets;
// the load's user holds none). Each request has a --timeout deadline. The generator is its own process (the host's CPU is the
// host's), bounded in count (at most 20,000 outstanding) and time (the steps), loopback only.
//
// Baselines, measured in the same run: each kind's latency at 20 req/s of the mix (little
// contention: close to its service time), and a low-rate (50/s) step of the mix; each step prints p99 as a ratio of the low-rate step's. The
// same steps run against the host without admission limits (`unlimited`: how it behaved before)
// and with the default `server.admission` (or --max-in-flight / --max-vector).
//
//   pnpm build && node bench/mixed-load.mjs [--rates 100,200,400,800,1000] [--duration 20]
//        [--records 100000] [--idle-sockets 10000] [--timeout 10] [--transport uws|node]
//        [--modes unlimited,admission] [--max-in-flight 64] [--max-vector 8] [--profile] [--db-timing]
//
// --records 5000 --idle-sockets 500 --duration 8 makes a quick run. --profile runs the host of the
// last mode with --cpu-prof and prints where its main thread spent the highest step. --db-timing has
// the host print, after each step, where its SQLite connection's time went (per kind of hold: wait,
// held, statements, idle while held) and a vector search's steps (bench/servers/db-timing.mjs).
// Not a test: it prints figures and never fails on them. On a shared machine read the ratios.
import { fork, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request, selfTimes } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '100,200,400,800,1000' },
    duration: { type: 'string', default: '20' },
    records: { type: 'string', default: '100000' },
    'idle-sockets': { type: 'string', default: '10000' },
    timeout: { type: 'string', default: '10' },
    transport: { type: 'string', default: 'uws' },
    modes: { type: 'string', default: 'unlimited,admission' },
    'max-in-flight': { type: 'string' },
    'max-vector': { type: 'string' },
    profile: { type: 'boolean', default: false },
    'db-timing': { type: 'boolean', default: false },
  },
});
for (const pkg of ['core', 'host', 'adapters/db-sqlite', 'adapters/ai-openai', 'adapters/vector-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first.`);
    process.exit(1);
  }
}
const rates = args.rates.split(',').map(Number);
const seconds = Number(args.duration);
const records = Number(args.records);
const idleSockets = Number(args['idle-sockets']);
const timeoutMs = Number(args.timeout) * 1000;
const secret = 'bench-secret-bench-secret-bench-secret-0123';
const dir = mkdtempSync(join(tmpdir(), 'trellis-mixed-load-'));
const loadAverage = () => loadavg().map((x) => x.toFixed(1)).join(', ');

// ---- the generator (and the fake model) -------------------------------------------------------
const generator = fork(join(here, 'mixed-load-generator.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const waiting = new Map();
generator.on('message', (message) => {
  if (message.op === 'error') {
    console.error(`the generator failed: ${message.message}`);
    process.exit(1);
  }
  const resolve = waiting.get(message.op);
  waiting.delete(message.op);
  resolve?.(message);
});
const reply = (op) => new Promise((resolve) => waiting.set(op, resolve));
const ask = (message) => {
  const answer = reply(message.op);
  generator.send(message);
  return answer;
};
const { modelPort } = await reply('ready');

// ---- the database: users, documents, a workflow, a collection, conversations ------------------
const workflow = {
  type: 'doc',
  content: [
    { type: 'inputBlock', attrs: { id: 'in-n', name: 'n', type: 'number', required: true } },
    { type: 'codeBlock', attrs: { id: 'code-calc', name: 'calc', language: 'javascript' }, content: [{ type: 'text', text: 'return inputs.n * 2;' }] },
    { type: 'outputBlock', attrs: { id: 'out', name: 'out' }, content: [{ type: 'text', text: 'n×2={{ calc }}' }] },
  ],
};

async function prepare(path) {
  const { createHost } = await import('@trellis/host');
  const { aiProvidersServiceIdentifier, provide, vectorStoreServiceIdentifier, vectorToBytes } = await import('@trellis/core');
  const { OpenAiProvider } = await import('@trellis/ai-openai');
  const host = createHost({
    config: {
      server: { host: '127.0.0.1', port: 0, transport: 'node' },
      database: { url: `sqlite:${path}` },
      auth: { jwtSecret: secret, rateLimit: { perIp: 1_000_000_000, perAccount: 1_000_000_000 } },
      log: { level: 'error' },
    },
    adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
  });
  await host.start();
  try {
    const url = host.url;
    const call = (method, p, body, token) => request(url, method, p, token, body);
    const user = await call('POST', '/auth/register', { email: 'load@example.com', password: 'correct horse battery' });
    const token = user.token;
    const project = await call('POST', '/project', { name: 'Load', tools: [], access: 'team' }, token);
    const documents = [];
    for (let i = 0; i < 20; i++) {
      const paragraphs = Array.from({ length: 30 }, (_, j) => ({ type: 'paragraph', attrs: { id: `p${j}` }, content: [{ type: 'text', text: `Paragraph ${j} of document ${i}: some ordinary prose of a working document.` }] }));
      documents.push((await call('POST', '/documents', { projectId: project.id, title: `Doc ${i}`, content: { type: 'doc', content: paragraphs } }, token)).id);
    }
    const block = await call('POST', `/block/${project.id}`, { name: 'load flow', type: 'workflow', content: workflow }, token);
    await call('POST', `/block/${block.id}/deploy`, { access: 'public' }, token);
    const collection = 'Load';
    await call('POST', `/tool/vdb/${collection}`, { content: 'the first record', tags: ['seed'] }, token);
    const modelRow = await call('POST', '/ai/models', { name: 'bench', service: 'openai', conf: { model: 'bench', baseURL: `http://127.0.0.1:${modelPort}/v1`, compatibility: 'compatible' } }, token);
    const bot = await call('POST', '/bot', { name: 'bench', conf: { modelId: modelRow.id } }, token);
    const conversations = [];
    for (let i = 0; i < 200; i++) conversations.push((await call('POST', '/conversation', { name: `load ${i}`, botId: bot.id }, token)).id);
    // The idle sockets belong to other users than the one the load acts as (as on a real host:
    // people with a tab open), so the load's pushes (conversation deltas) reach none of them.
    const idleTokens = [];
    for (let i = 0; i < Math.min(100, Math.max(1, idleSockets)); i++) idleTokens.push((await call('POST', '/auth/register', { email: `idle-${i}@example.com`, password: 'correct horse battery' })).token);

    // The collection's other records go straight into the table (random unit vectors of its
    // dimension): the host's vector store brings its index up to date when it starts.
    const em = host.kernel.fork();
    const [{ id: collectionId, dimension }] = await em.getConnection().execute('SELECT id, dimension FROM tool_vdb_collections', [], 'all');
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const now = new Date().toISOString();
    for (let start = 1; start < records; start += 500) {
      const values = [];
      const params = [];
      for (let i = start; i < Math.min(records, start + 500); i++) {
        const v = new Float32Array(dimension);
        let norm = 0;
        for (let d = 0; d < dimension; d++) norm += (v[d] = random() - 0.5) ** 2;
        for (let d = 0; d < dimension; d++) v[d] /= Math.sqrt(norm);
        values.push('(?, ?, ?, ?, ?, ?, ?, ?, ?)');
        params.push(`00000000-0000-7000-9000-${String(i).padStart(12, '0')}`, collectionId, `record ${i}`, '["common"]', JSON.stringify({ i }), vectorToBytes(v), dimension, now, now);
      }
      await em.getConnection().execute(`INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES ${values.join(', ')}`, params);
    }
    // As on a host that has served searches before: the collection's in-memory index built and
    // saved, so the host under test restores it when it starts instead of building it (100,000
    // rows read a page at a time) under the load, with every search falling back to a scan meanwhile.
    await call('POST', `/tool/vdb/${collection}/vector`, { content: 'warm the index', query: { limit: 1 } }, token);
    await host.kernel.get(vectorStoreServiceIdentifier).idle?.();
    const [saved] = await em.getConnection().execute('SELECT count(*) AS n FROM tool_vdb_index_snapshots', [], 'all');
    if (Number(saved?.n) !== 1) console.log('  (the in-memory vector index was not saved: the host under test builds it under the load)');
    // Everything into the main file: each mode's host runs on a copy of it (a copy without the
    // -wal file would miss the last commits, the saved index among them).
    await em.getConnection().execute('PRAGMA wal_checkpoint(TRUNCATE)', [], 'all');
    return { token, idleTokens, projectId: project.id, documents, blockId: block.id, collection, conversations, dimension };
  } finally {
    await host.stop();
  }
}

// ---- the host under test ----------------------------------------------------------------------
async function startHost(db, admission, profileDir) {
  const child = spawn(process.execPath, [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), join(here, 'servers', 'trellis-mixed.mjs')], {
    cwd: here,
    env: { ...process.env, ...(args['db-timing'] ? { BENCH_DB_TIMING: '1' } : {}), BENCH_DB: db, BENCH_JWT_SECRET: secret, BENCH_TRANSPORT: args.transport, BENCH_ADMISSION: JSON.stringify(admission) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = performance.now();
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(JSON.parse(String(d).split('\n')[0]).port));
    child.once('exit', (code) => reject(new Error(`the host exited with ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}`, startMs: performance.now() - started };
}

/** The host process's resident memory (MB) and CPU time (ms, all threads; main thread alone). */
function usage(pid) {
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const main = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  return { rss, cpuMs: ticks * 10, mainMs: main };
}

const fmt = (ms) => (ms === null || ms === undefined ? '     -' : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s`.padStart(6) : `${Math.round(ms)} ms`.padStart(6));

function printStep(label, r, baseline, before, after) {
  const totals = Object.values(r.kinds).reduce(
    (t, k) => ({ sent: t.sent + k.sent, shed: t.shed + k.shed, timeouts: t.timeouts + k.timeouts, errors: t.errors + k.errors + Object.values(k.other).reduce((a, b) => a + b, 0), bare503: t.bare503 + k.shedWithoutRetryAfter }),
    { sent: 0, shed: 0, timeouts: 0, errors: 0, bare503: 0 },
  );
  const dropped = Object.values(r.kinds).reduce((t, k) => t + k.dropped, 0);
  const ratio = baseline?.p99 ? ` (${(r.p99 / baseline.p99).toFixed(1)}× low-rate p99)` : '';
  const cpu = after && before ? `  host CPU ${((after.cpuMs - before.cpuMs) / 1000 / r.seconds * 100).toFixed(0)}% (main thread ${((after.mainMs - before.mainMs) / 1000 / r.seconds * 100).toFixed(0)}%)  RSS ${after.rss.toFixed(0)} MB` : '';
  console.log(
    `  ${label.padEnd(16)} offered ${String(r.offered).padStart(5)}/s  served ${r.servedPerSecond.toFixed(0).padStart(5)}/s  p50 ${fmt(r.p50)}  p99 ${fmt(r.p99)}${ratio}  shed ${totals.shed}${totals.bare503 ? ` (${totals.bare503} without Retry-After)` : ''}  timeouts ${totals.timeouts}  other ${totals.errors}${dropped ? `  dropped ${dropped}` : ''}${cpu}`,
  );
  return totals;
}

function printKinds(r) {
  for (const [kind, k] of Object.entries(r.kinds)) {
    const other = Object.entries(k.other).map(([s, c]) => `${c}×${s}`).join(' ');
    console.log(`      ${kind.padEnd(56)} ok ${String(k.ok).padStart(6)}  p50 ${fmt(k.p50)}  p99 ${fmt(k.p99)}  shed ${k.shed}  timeouts ${k.timeouts}${other ? `  ${other}` : ''}${k.errors ? `  errors ${k.errors}` : ''}`);
  }
}

/** --db-timing: the host prints where its connection's time went since the last report (stderr). */
async function timingReport(host) {
  if (!args['db-timing']) return;
  host.child.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 500));
}

// ---- the run -------------------------------------------------------------------------------------
try {
  console.log(`mixed load: ${records.toLocaleString('en')} vector records, ${idleSockets.toLocaleString('en')} idle sockets, steps of ${seconds} s at ${rates.join(', ')} req/s, ${timeoutMs / 1000} s deadline, ${args.transport}; Node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAverage()}`);
  const prepared = join(dir, 'prepared.db');
  let t0 = performance.now();
  const state = await prepare(prepared);
  console.log(`prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s (${state.dimension}-dimension vectors)`);

  const admissionFor = (mode) =>
    mode === 'unlimited'
      ? { maxInFlight: 0, maxEventLoopDelayMs: 0, routes: {} }
      : {
          ...(args['max-in-flight'] ? { maxInFlight: Number(args['max-in-flight']) } : {}),
          ...(args['max-vector'] ? { routes: { 'POST /tool/vdb/:className/vector': Number(args['max-vector']) } } : {}),
        };
  const modes = args.modes.split(',');
  for (const [index, mode] of modes.entries()) {
    const db = join(dir, `${mode}.db`);
    copyFileSync(prepared, db);
    const profileDir = args.profile && index === modes.length - 1 ? mkdtempSync(join(dir, 'profile-')) : undefined;
    const host = await startHost(db, admissionFor(mode), profileDir);
    console.log(`\n${mode}: server.admission ${JSON.stringify(admissionFor(mode))} (host up in ${(host.startMs / 1000).toFixed(1)} s, vector index synced)`);
    try {
      t0 = performance.now();
      const idle = await ask({ op: 'idle', url: `${host.url.replace(/^http/, 'ws')}/v3/wss`, tokens: state.idleTokens, count: idleSockets });
      console.log(`  ${idle.opened} idle sockets authenticated in ${((performance.now() - t0) / 1000).toFixed(1)} s${idle.failed ? ` (${idle.failed} failed, the first: ${idle.firstFailure})` : ''}; host RSS ${usage(host.child.pid).rss.toFixed(0)} MB`);
      // Baseline 1: each kind's latency with little contention.
      const alone = await ask({ op: 'step', base: host.url, rate: 20, seconds: 4, timeoutMs, state });
      console.log('  baseline: each kind at 20 req/s of the mix (little contention):');
      printKinds(alone.result);
      await timingReport(host);
      // Baseline 2: a low rate of the mix.
      const low = (await ask({ op: 'step', base: host.url, rate: 50, seconds, timeoutMs, state })).result;
      printStep('baseline 50/s', low, null);
      await timingReport(host);
      for (const rate of rates) {
        const before = usage(host.child.pid);
        const { result } = await ask({ op: 'step', base: host.url, rate, seconds, timeoutMs, state });
        const after = usage(host.child.pid);
        printStep(`step`, result, low, before, after);
        printKinds(result);
        await timingReport(host);
      }
    } finally {
      host.child.kill('SIGTERM');
      await new Promise((resolve) => host.child.once('exit', resolve));
    }
    if (profileDir) {
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (file) {
        const { total, self } = selfTimes(JSON.parse(readFileSync(join(profileDir, file), 'utf8')));
        console.log(`\n  where the host's main thread went (${mode}, whole run, ${(total / 1e6).toFixed(1)} s sampled), top self times:`);
        for (const [key, t] of self.slice(0, Number(process.env.TOP ?? 25))) console.log(`    ${((t / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
      }
    }
  }
  console.log(`\nload average at the end ${loadAverage()}`);
} finally {
  generator.send({ op: 'close' });
  rmSync(dir, { recursive: true, force: true });
}
