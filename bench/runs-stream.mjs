#!/usr/bin/env node
// Streaming path of runs: a document whose code block emits N chunks (default 10,000), run with
// POST /documents/:id/run (SSE), against writing the very same bytes, frame by frame, on a bare
// SSE response of the same host, in the same process and the same run of this script.
//
//   pnpm bench:runs                 (builds the packages first)
//   node bench/runs-stream.mjs [--chunks 10000] [--rounds 5] [--transport uws|node]
//
// "events/s" counts SSE frames (every event of the run: run_start, block_start, the chunks,
// block_complete, block_end, run_complete) over the wall time from the request to the end of the
// body. Not a test: it prints figures and never fails on them.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
    transport: { type: 'string', default: 'uws' },
  },
});
const chunks = Number(args.chunks);
const rounds = Math.max(1, Number(args.rounds));

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench:runs\` does).`);
    process.exit(1);
  }
}

const { coreModules, defineModule, Reply } = await import('@trellis/core');
const { createHost } = await import('@trellis/host');
const { sqliteDatabase } = await import('@trellis/db-sqlite');

/** The frames the bare route writes: the bytes of the last run's response, split into events. */
let bareFrames = [];
const bareModule = defineModule({
  name: 'bench-bare-sse',
  routes: [
    {
      method: 'GET',
      path: '/bench/bare-sse',
      auth: 'none',
      hidden: true,
      handler() {
        const frames = bareFrames;
        async function* body() {
          for (const frame of frames) yield frame;
        }
        return Reply.stream(body(), 'text/event-stream; charset=utf-8', { 'x-accel-buffering': 'no' });
      },
    },
  ],
});

const dir = mkdtempSync(join(tmpdir(), 'trellis-runs-bench-'));
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: args.transport },
    auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
    runs: { codeTimeoutMs: 600_000, maxTimeoutSeconds: 3600 },
    log: { level: 'error' },
  },
  database: sqliteDatabase({ path: join(dir, 'bench.db') }),
  modules: [...coreModules, bareModule],
});

async function json(method, path, token, body) {
  const response = await fetch(`${host.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await response.json();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** Reads a whole streamed body; returns its text and the wall time. */
async function timed(url, init) {
  const started = performance.now();
  const response = await fetch(url, init);
  const text = await response.text();
  return { ms: performance.now() - started, text, status: response.status };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

try {
  await host.start();
  const user = await json('POST', '/auth/register', undefined, { email: `bench-${Date.now()}@example.com`, password: 'correct horse battery' });
  const token = user.token;
  const project = await json('POST', '/project', token, { name: `bench ${Date.now()}`, tools: [], access: 'team' });
  const code = `for (let i = 0; i < ${chunks}; i++) emit('chunk ' + i + ' ');\nreturn 'done';`;
  const doc = await json('POST', '/documents', token, {
    projectId: project.id,
    title: 'stream bench',
    content: { type: 'doc', content: [{ type: 'codeBlock', attrs: { id: 'c1', name: 'emitter', language: 'javascript' }, content: [{ type: 'text', text: code }] }] },
  });

  // The same run with no chunks: the fixed cost of a run (credits, records, sandbox start), so the
  // per-event cost of streaming can be told apart from it.
  const empty = await json('POST', '/documents', token, {
    projectId: project.id,
    title: 'empty run',
    content: { type: 'doc', content: [{ type: 'codeBlock', attrs: { id: 'c1', name: 'emitter', language: 'javascript' }, content: [{ type: 'text', text: "return 'done';" }] }] },
  });
  const runInit = { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({}) };
  const fixed = [];
  const runs = [];
  const bares = [];
  // One warm-up round of each, then interleaved rounds.
  for (let round = -1; round < rounds; round++) {
    const run = await timed(`${host.url}/documents/${doc.id}/run`, runInit);
    if (run.status !== 200) throw new Error(`run answered ${run.status}: ${run.text.slice(0, 300)}`);
    const frames = run.text.split('\n\n').filter(Boolean).map((frame) => `${frame}\n\n`);
    if (!run.text.includes('event: run_complete') || run.text.includes('event: block_error')) throw new Error(`the run did not complete: ${run.text.slice(-500)}`);
    bareFrames = frames;
    const bare = await timed(`${host.url}/bench/bare-sse`, {});
    if (bare.text !== run.text) throw new Error('the bare response differs from the run response');
    const baseline = await timed(`${host.url}/documents/${empty.id}/run`, runInit);
    if (round >= 0) {
      fixed.push(baseline.ms);
      runs.push({ ms: run.ms, events: frames.length, bytes: Buffer.byteLength(run.text) });
      bares.push({ ms: bare.ms, events: frames.length });
    }
  }
  const runMs = median(runs.map((r) => r.ms));
  const bareMs = median(bares.map((r) => r.ms));
  const events = runs[0].events;
  const runRate = events / (runMs / 1000);
  const bareRate = events / (bareMs / 1000);
  console.log(`runs streaming bench (${args.transport} transport, ${chunks} chunks, ${events} events, ${(runs[0].bytes / 1024).toFixed(0)} KiB, median of ${rounds} rounds)\n`);
  console.log(`  run (code block → event log → SSE)   ${runMs.toFixed(1).padStart(8)} ms  ${Math.round(runRate).toLocaleString('en').padStart(10)} events/s`);
  console.log(`  bare SSE of the same bytes           ${bareMs.toFixed(1).padStart(8)} ms  ${Math.round(bareRate).toLocaleString('en').padStart(10)} events/s`);
  const fixedMs = median(fixed);
  const perEventRate = (events - 5) / Math.max(0.001, (runMs - fixedMs) / 1000);
  console.log(`  run with no chunks (fixed cost)      ${fixedMs.toFixed(1).padStart(8)} ms`);
  console.log(`  streaming path alone (run − fixed)   ${(runMs - fixedMs).toFixed(1).padStart(8)} ms  ${Math.round(perEventRate).toLocaleString('en').padStart(10)} events/s`);
  console.log(`\n  run / bare, whole run:        ${(runRate / bareRate).toFixed(2)}`);
  console.log(`  run / bare, per-event cost:   ${(perEventRate / bareRate).toFixed(2)} (target: at least 0.50)`);
} finally {
  await host.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
