#!/usr/bin/env node
// Where one streamed run's time goes: a timeline of a single run on a warm host, to read beside
// bench/runs.mjs's stream figures (docs/runs.md, "The stream's first read, and a cheaper emit").
// A host on SQLite in this process (`--transport node|uws`) with a deployed workflow whose code
// block emits `--chunks` chunks; `--runs` streamed runs through POST /block/{bid}/api (stream,
// sse), one at a time after a `--pause` of milliseconds each, and the last one traced: each call
// into the sqlite3 driver (when it was made, when its callback ran), each job posted to and
// message received from the sandbox's worker, each write of the response (`node:http` only), and
// the client's first bytes and end, in ms from the request. Prints the median time to the first
// bytes and to the end of the runs after the first tenth, then the timeline (`--all` also lists
// the chunk writes and the sandbox's output batches). Not a test: it prints figures only.
//
//   node bench/run-trace.mjs [--transport node] [--chunks 10000] [--runs 200] [--pause 20] [--all]
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { request } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    transport: { type: 'string', default: 'node' },
    chunks: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '200' },
    pause: { type: 'string', default: '20' },
    all: { type: 'boolean', default: false },
  },
});
const here = fileURLToPath(new URL('.', import.meta.url));

/** The timeline of the traced run, [ms from its request, what], or null while not tracing. */
let marks = null;
let origin = 0;
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
  if (event === 'message' && (args.all || message?.type !== 'output')) mark(`sandbox message ${message?.type ?? ''}`);
  return emitWorker.call(this, event, message, ...rest);
};
const writeHead = http.ServerResponse.prototype.writeHead;
http.ServerResponse.prototype.writeHead = function (...params) {
  mark(`response head ${params[0]}`);
  return writeHead.apply(this, params);
};
let writes = 0;
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

const { coreModules } = await import('@trellis/core');
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
  const streamed = () =>
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
  const runs = Math.max(2, Number(args.runs));
  const figures = [];
  for (let i = 0; i < runs; i++) {
    await new Promise((resolve) => setTimeout(resolve, Number(args.pause)));
    if (i === runs - 1) {
      marks = [];
      writes = 0;
      origin = performance.now();
    }
    figures.push(await streamed());
  }
  // Callbacks still due (the last commits) land in the timeline too.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const timeline = marks;
  marks = null;
  const measured = figures.slice(Math.floor(runs / 10), -1);
  const median = (key) => measured.map((f) => f[key]).sort((a, b) => a - b)[Math.floor(measured.length / 2)] ?? Number.NaN;
  console.log(`${args.transport}, ${args.chunks} chunks: median of ${measured.length} runs after ${runs - measured.length - 1} unmeasured: ${median('first').toFixed(2)} ms to the first bytes, ${median('end').toFixed(2)} ms to the end`);
  console.log('the last run, ms from its request (> a call, < its callback):');
  for (const [ms, what] of timeline) console.log(`${ms.toFixed(3).padStart(9)}  ${what}`);
} finally {
  await host.stop();
  rmSync(dir, { recursive: true, force: true });
}
