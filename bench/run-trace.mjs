#!/usr/bin/env node
// Where one streamed run's time goes: a timeline of a single run on a warm host, to read beside
// bench/runs.mjs's stream figures (docs/runs.md, "The stream's first read, and a cheaper emit").
// A host on SQLite in this process (`--transport node|uws`) with a deployed workflow whose code
// block emits `--chunks` chunks; `--runs` streamed runs through POST /block/{bid}/api (stream,
// sse), one at a time after a `--pause` of milliseconds each. Each measured run (after the first
// tenth) is traced: each call into the sqlite3 driver (when it was made, when its callback ran),
// each call of the run store's `append` and of the group commit's `run` and when it settled, each
// job posted to and message received from the sandbox's worker (the first output of a run, and
// `--all` every one), each write of the response (`node:http` only), each garbage collection, and
// the client's first bytes and end, in ms from the request. Prints the median time to the first
// bytes and to the end, the median of each phase of a run over the traced runs (the request to
// the record's transaction, the transaction, its commit to the sandbox's job, ..., the final
// transaction, the garbage collections), then the last run's timeline (`--all` also lists the
// chunk writes and the sandbox's output batches).
//
// `--client process`: the reading client is bench/servers/stream-client.mjs in a process of its
// own (as in bench/runs.mjs; the default reads in this process, whose reading then shares the
// host's main thread), and times count from the server's 'request' event. `--cpu-prof <file>`
// writes a profile of this process's main thread over the measured runs and prints the most self
// time; `--heap-prof` samples the main thread's allocations over them and prints KiB per run by
// allocating function. With TRACE_LAST_PROFILE=<file> in the environment, the last run alone is
// profiled (25 µs sampling), its samples timed on the timeline's clock (`originHr`). Not a test:
// it prints figures only.
//
//   node bench/run-trace.mjs [--transport node] [--chunks 10000] [--runs 200] [--pause 20] [--all]
//                            [--client process] [--cpu-prof <file>] [--heap-prof]
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { Session } from 'node:inspector/promises';
import { request, selfTimes } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    transport: { type: 'string', default: 'node' },
    chunks: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '200' },
    pause: { type: 'string', default: '20' },
    all: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string', default: '' },
    client: { type: 'string', default: 'in-process' },
    'heap-prof': { type: 'boolean', default: false },
  },
});
const here = fileURLToPath(new URL('.', import.meta.url));

/** The timeline of the traced run, [ms from its request, what], or null while not tracing. */
let marks = null;
let origin = 0;
let originHr = 0;
/** With the reading client in a process of its own, the traced run's times count from the server's 'request' event. */
let originAtRequest = false;
const mark = (what) => marks?.push([performance.now() - origin, what]);

/** Wraps `target[name]` so each call is marked, and the callback it was given too. */
function traceCalls(target, name, label) {
  const original = target[name];
  target[name] = function (...params) {
    if (!marks) return original.apply(this, params);
    const tag = `${label}.${name} ${(typeof params[0] === 'string' ? params[0] : (this.sql ?? '')).replace(/\s+/g, ' ').slice(0, 70)}`;
    mark(`> ${tag}`);
    const at = params.findIndex((param) => typeof param === 'function');
    if (at >= 0) {
      const callback = params[at];
      params[at] = function (...results) {
        mark(`< ${tag}`);
        return callback.apply(this, results);
      };
    }
    return original.apply(this, params);
  };
}

// The driver the SQLite adapter uses: @mikro-orm/sqlite's (one copy in the workspace, so this is the same module).
const fromAdapter = createRequire(join(here, '..', 'packages', 'adapters', 'db-sqlite', 'package.json'));
const sqlite3 = createRequire(fromAdapter.resolve('@mikro-orm/sqlite'))('sqlite3');
for (const name of ['run', 'all', 'get', 'exec', 'prepare']) traceCalls(sqlite3.Database.prototype, name, 'Database');
for (const name of ['run', 'all', 'get']) traceCalls(sqlite3.Statement.prototype, name, 'Statement');
traceCalls(Worker.prototype, 'postMessage', 'sandbox');
const emitWorker = Worker.prototype.emit;
Worker.prototype.emit = function (event, message, ...rest) {
  if (event === 'message' && (args.all || message?.type !== 'output' || !firstOutput++)) mark(`sandbox message ${message?.type ?? ''}${message?.type === 'done' ? ` (the code ran ${message.outcome?.durationMs?.toFixed?.(2)} ms)` : ''}`);
  return emitWorker.call(this, event, message, ...rest);
};
const serverEmit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...rest) {
  if (event === 'request' && marks && originAtRequest) {
    origin = performance.now();
    originAtRequest = false;
  }
  if (event === 'request') mark('server: request');
  return serverEmit.call(this, event, ...rest);
};
const writeHead = http.ServerResponse.prototype.writeHead;
http.ServerResponse.prototype.writeHead = function (...params) {
  mark(`response head ${params[0]}`);
  return writeHead.apply(this, params);
};
let writes = 0;
let firstOutput = 0;
const write = http.ServerResponse.prototype.write;
http.ServerResponse.prototype.write = function (...params) {
  if (args.all || writes++ === 0) mark(`response write (${String(params[0]).length} chars)`);
  return write.apply(this, params);
};
const end = http.ServerResponse.prototype.end;
http.ServerResponse.prototype.end = function (...params) {
  mark('response end');
  return end.apply(this, params);
};

// Garbage collections of the main thread's heap, where they fall (a pause shows as a gap between callbacks).
new PerformanceObserver((list) => {
  if (!marks) return;
  for (const entry of list.getEntries()) marks.push([entry.startTime - origin, `gc ${['', 'minor', 'major', '', 'incremental', '', '', '', 'weak callbacks'][entry.detail?.kind] ?? entry.detail?.kind} ${entry.duration.toFixed(2)} ms`]);
}).observe({ entryTypes: ['gc'] });

const { coreModules, GroupCommit, SqlRunStore } = await import('@trellis/core');
/** Wraps `target[name]`, a method that answers a promise: marks its call and its settling. */
function traceAsync(target, name, label) {
  const original = target[name];
  target[name] = function (...params) {
    if (!marks) return original.apply(this, params);
    const tag = `${label}.${name}${params.length && Array.isArray(params[1]) ? ` (${params[1].length} events)` : ''}`;
    mark(`>> ${tag}`);
    const answer = original.apply(this, params);
    answer?.then?.(() => mark(`<< ${tag}`), () => mark(`<< ${tag} (failed)`));
    return answer;
  };
}
traceAsync(SqlRunStore.prototype, 'append', 'store');
traceAsync(GroupCommit.prototype, 'run', 'group');
const { createHost } = await import('@trellis/host');
const { sqliteDatabase } = await import('@trellis/db-sqlite');
const dir = mkdtempSync(join(tmpdir(), 'trellis-run-trace-'));
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: args.transport },
    auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
    log: { level: 'fatal' },
    billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1_000_000_000, monthlyPrice: 0, yearlyPrice: 0 } } },
    runs: { codeTimeoutMs: 600_000, maxTimeoutSeconds: 3600 },
  },
  database: sqliteDatabase({ path: join(dir, 'trace.db') }),
  modules: coreModules,
});
await host.start();
try {
  const user = await request(host.url, 'POST', '/auth/register', undefined, { email: `trace-${Date.now()}@example.com`, password: 'correct horse battery' });
  const project = await request(host.url, 'POST', '/project', user.token, { name: 'trace', tools: [], access: 'team' });
  const code = `for (let i = 0; i < ${Number(args.chunks)}; i++) emit('chunk ' + i + ' ');\nreturn 'done';`;
  const content = { type: 'doc', content: [{ type: 'codeBlock', attrs: { id: 'c1', name: 'emitter', language: 'javascript' }, content: [{ type: 'text', text: code }] }] };
  const block = await request(host.url, 'POST', `/block/${project.id}`, user.token, { name: 'trace', type: 'workflow', content });
  await request(host.url, 'POST', `/block/${block.id}/deploy`, user.token, { access: 'public' });
  const url = new URL(`${host.url}/block/${block.id}/api`);
  const agent = new http.Agent({ keepAlive: true });
  /** One streamed run, read to its end: ms to its first bytes and to its end. */
  let streamed = () =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let first = 0;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (text) => {
          if (!first) {
            first = performance.now() - started;
            mark('client: first bytes');
          }
          body += text;
        });
        res.on('end', () => {
          mark('client: end');
          if (res.statusCode !== 200 || !body.includes('event: run_complete')) reject(new Error(`the run failed: ${res.statusCode} ${body.slice(-300)}`));
          else resolve({ first, end: performance.now() - started });
        });
      });
      req.on('error', reject);
      req.end(JSON.stringify({ stream: true, format: 'sse', inputs: {} }));
    });
  if (args.client === 'process') {
    const { fork } = await import('node:child_process');
    const reader = fork(join(here, 'servers', 'stream-client.mjs'), [], { stdio: 'inherit' });
    const job = { url: url.href, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: true, format: 'sse', inputs: {} }), streams: 1 };
    streamed = () =>
      new Promise((resolve, reject) => {
        reader.once('message', (answer) => {
          if (answer.error || !answer.ok) reject(new Error(answer.error ?? answer.last));
          else resolve({ first: answer.first, end: answer.ms });
        });
        reader.send(job);
      });
    process.once('beforeExit', () => reader.disconnect());
  }
  const runs = Math.max(2, Number(args.runs));
  const figures = [];
  /** The timelines of the measured runs before the last. */
  const timelines = [];
  let session = null;
  for (let i = 0; i < runs; i++) {
    await new Promise((resolve) => setTimeout(resolve, Number(args.pause)));
    if (args['cpu-prof'] && i === Math.floor(runs / 10)) {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 50 });
      await session.post('Profiler.start');
    }
    if (args['heap-prof'] && i === Math.floor(runs / 10)) {
      session = new Session();
      session.connect();
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    }
    if (args['heap-prof'] && session && i === runs - 1) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      session.disconnect();
      session = null;
      // Bytes allocated per run by the allocating function (self), the most first.
      const self = new Map();
      let total = 0;
      const walk = (node) => {
        const { functionName, url, lineNumber } = node.callFrame;
        const key = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/packages\//, '')}:${lineNumber + 1}`;
        self.set(key, (self.get(key) ?? 0) + node.selfSize);
        total += node.selfSize;
        for (const child of node.children) walk(child);
      };
      walk(profile.head);
      const measuredRuns = runs - 1 - Math.floor(runs / 10);
      console.log(`main thread's allocations over the measured runs: ${(total / measuredRuns / 1024).toFixed(0)} KiB a run; the most:`);
      for (const [key, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${(bytes / measuredRuns / 1024).toFixed(1).padStart(9)} KiB  ${key}`);
    }
    if (session && !args['heap-prof'] && i === runs - 1) {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = null;
      writeFileSync(args['cpu-prof'], JSON.stringify(profile));
      const { total, self } = selfTimes(profile);
      console.log(`main thread over the measured runs, ${(total / 1000).toFixed(0)} ms sampled (${args['cpu-prof']}); the most self time:`);
      for (const [key, us] of self.slice(0, 25)) console.log(`${(us / 1000).toFixed(1).padStart(8)} ms  ${key}`);
    }
    if (i >= Math.floor(runs / 10)) {
      // Every measured run is traced (for the phases' medians); the last one is printed.
      if (marks) timelines.push(marks);
      marks = [];
      writes = 0;
      firstOutput = 0;
      origin = performance.now();
      originAtRequest = args.client === 'process';
    }
    if (i === runs - 1) {
      if (process.env.TRACE_LAST_PROFILE) {
        session = new Session();
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 25 });
        await session.post('Profiler.start');
        originHr = Number(process.hrtime.bigint() / 1000n);
        origin = performance.now();
      }
    }
    figures.push(await streamed());
    if (session && process.env.TRACE_LAST_PROFILE && i === runs - 1) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(process.env.TRACE_LAST_PROFILE, JSON.stringify({ ...profile, originHr }));
    }
  }
  // Callbacks still due (the last commits) land in the timeline too.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const timeline = marks;
  marks = null;
  const measured = figures.slice(Math.floor(runs / 10), -1);
  const median = (key) => measured.map((f) => f[key]).sort((a, b) => a - b)[Math.floor(measured.length / 2)] ?? Number.NaN;
  console.log(`${args.transport}, ${args.chunks} chunks: median of ${measured.length} runs after ${runs - measured.length - 1} unmeasured: ${median('first').toFixed(2)} ms to the first bytes, ${median('end').toFixed(2)} ms to the end`);
  // Where a run's time goes, phase by phase: the median of each over the measured runs.
  const phases = [
    ['the request to the first BEGIN (route, validation, the block read)', (t) => at(t, 'server: request'), (t) => at(t, /^> Database\.\w+ BEGIN/ )],
    ['the record\'s transaction, BEGIN to its COMMIT\'s callback', (t) => at(t, /^> Database\.\w+ BEGIN/ ), (t) => at(t, /^< Database\.\w+ COMMIT/ )],
    ['its commit to the sandbox job\'s post', (t) => at(t, /^< Database\.\w+ COMMIT/ ), (t) => at(t, '> sandbox.postMessage')],
    ['the post to the first output (or done) taken on this thread', (t) => at(t, '> sandbox.postMessage'), (t) => at(t, 'sandbox message')],
    ['the post to the first response write', (t) => at(t, '> sandbox.postMessage'), (t) => at(t, 'response write')],
    ['the first output to done', (t) => at(t, 'sandbox message'), (t) => at(t, 'sandbox message done')],
    ['done to the last BEGIN', (t) => at(t, 'sandbox message done'), (t) => at(t, /^> Database\.\w+ BEGIN/ , true)],
    ['the last transaction, BEGIN to its COMMIT\'s callback', (t) => at(t, /^> Database\.\w+ BEGIN/ , true), (t) => at(t, /^< Database\.\w+ COMMIT/ , true)],
    ['its commit to the response\'s end', (t) => at(t, /^< Database\.\w+ COMMIT/ , true), (t) => at(t, 'response end')],
    ['garbage collection (all kinds, summed)', () => 0, (t) => t.filter(([, what]) => what.startsWith('gc ')).reduce((sum, [, what]) => sum + Number(what.split(' ')[2]), 0)],
  ];
  function at(timeline, prefix, last = false) {
    const hits = timeline.filter(([, what]) => (typeof prefix === 'string' ? what.startsWith(prefix) : prefix.test(what)));
    return (last ? hits.at(-1) : hits[0])?.[0] ?? Number.NaN;
  }
  console.log(`phases, median over ${timelines.length} runs (ms):`);
  for (const [name, from, to] of phases) {
    const values = timelines.map((t) => to(t) - from(t)).filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
    console.log(`${(values[Math.floor(values.length / 2)] ?? Number.NaN).toFixed(2).padStart(8)}  ${name}`);
  }
  console.log('the last run, ms from its request (> a call, < its callback):');
  timeline.sort((a, b) => a[0] - b[0]);
  for (const [ms, what] of timeline) console.log(`${ms.toFixed(3).padStart(9)}  ${what}`);
} finally {
  await host.stop();
  rmSync(dir, { recursive: true, force: true });
}
