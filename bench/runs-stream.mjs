#!/usr/bin/env node
// Streaming path of runs: a document whose code block emits N chunks (default 10,000), run with
// POST /documents/:id/run (SSE or NDJSON), against writing the very same bytes, frame by frame, on
// a bare response of the same host, in the same process and the same run of this script.
//
//   pnpm bench:runs                 (builds the packages first)
//   node bench/runs-stream.mjs [--chunks 10000] [--rounds 5] [--transport uws|node|both]
//                              [--format sse|ndjson|both] [--warmup 3] [--cpu-prof] [--threads]
//                              [--alloc-prof]
//
// Default: both transports and both formats, one host per transport. "events/s" counts events
// (SSE frames or NDJSON lines: run_start, block_start, the chunks, block_complete, block_end,
// run_complete) over the wall time from the request to the end of the body. `--cpu-prof` writes
// a .cpuprofile of the measured rounds of each combination (the main thread) into the working
// directory and prints the functions with the most self time; on uWS most of the time a request
// waits shows as "(idle)" (the loop runs inside uWS' native code), so compare the CPU seconds, not
// the share of idle. Besides wall time it prints the CPU time each request took, of the whole
// process (every thread: the sandbox worker, the client in this process) and of the main thread
// alone (Linux), which a loaded machine disturbs far less. `--threads` adds the CPU time of every
// thread per round (Linux: V8's platform threads, which collect garbage, the sandbox's worker, the
// SQLite driver's pool); `--alloc-prof` the bytes allocated per round by function (V8's sampling
// heap profiler, objects collected since included). Not a test: it prints figures and
// never fails on them.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { request, selfTimes } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    transport: { type: 'string', default: 'both' },
    format: { type: 'string', default: 'both' },
    'cpu-prof': { type: 'boolean', default: false },
    threads: { type: 'boolean', default: false },
    'alloc-prof': { type: 'boolean', default: false },
  },
});
const transports = args.transport === 'both' ? ['uws', 'node'] : [args.transport];
const formats = args.format === 'both' ? ['sse', 'ndjson'] : [args.format];
for (const format of formats) if (!['sse', 'ndjson'].includes(format)) throw new Error(`--format: sse, ndjson or both, not ${format}`);
const chunks = Number(args.chunks);
const rounds = Math.max(1, Number(args.rounds));
const warmup = Math.max(0, Number(args.warmup));

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
let bareType = 'text/event-stream; charset=utf-8';
const bareModule = defineModule({
  name: 'bench-bare-stream',
  routes: [
    {
      method: 'GET',
      path: '/bench/bare-stream',
      auth: 'none',
      hidden: true,
      handler() {
        const frames = bareFrames;
        async function* body() {
          for (const frame of frames) yield frame;
        }
        return Reply.stream(body(), bareType, { 'x-accel-buffering': 'no' });
      },
    },
  ],
});

/** CPU time of the main thread in ms (Linux: its schedstat, in ns), or NaN elsewhere. */
const mainSchedstat = `/proc/self/task/${process.pid}/schedstat`;
const mainThreadMs = existsSync(mainSchedstat) ? () => Number(readFileSync(mainSchedstat, 'utf8').split(' ')[0]) / 1e6 : () => Number.NaN;

/** CPU time of every thread of the process in ms, by thread id (Linux; empty elsewhere). */
function threadMs() {
  const out = new Map();
  if (!existsSync(mainSchedstat)) return out;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** Reads a whole streamed body; returns its text, the wall time, the process' and the main thread's CPU time (and, with `--threads`, every thread's). */
async function timed(url, init) {
  const threads = args.threads ? threadMs() : null;
  const cpu = process.cpuUsage();
  const main = mainThreadMs();
  const started = performance.now();
  const response = await fetch(url, init);
  const text = await response.text();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const mainMs = mainThreadMs() - main;
  let perThread;
  if (threads) {
    perThread = new Map();
    for (const [tid, after] of threadMs()) perThread.set(tid, after - (threads.get(tid) ?? 0));
  }
  return { ms, cpuMs: (used.user + used.system) / 1000, mainMs, text, status: response.status, perThread };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Main-thread CPU profile of the measured rounds (`--cpu-prof`). */
async function profiler(label) {
  if (!args['cpu-prof']) return { start() {}, async stop() {} };
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  return {
    async start() {
      await session.post('Profiler.start');
    },
    async stop(cpuMs) {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      const file = `runs-stream-${label}-${Date.now()}.cpuprofile`;
      writeFileSync(file, JSON.stringify(profile));
      const { total, self } = selfTimes(profile);
      console.log(`    profile ${file}: ${(total / 1000).toFixed(0)} ms sampled, ${cpuMs.toFixed(0)} ms of process CPU; most self time:`);
      for (const [key, t] of self.slice(0, 25)) console.log(`      ${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(1).padStart(7)} ms  ${key}`);
    },
  };
}

/**
 * `--alloc-prof`: V8's sampling heap profiler around each measured request, counting the objects
 * collected since too, summed by allocating function (self) and by kind of request.
 */
const allocs = { run: new Map(), bare: new Map() };
let allocSession = null;
async function allocated(kind, measured, request) {
  if (!args['alloc-prof'] || !measured) return request();
  if (!allocSession) {
    allocSession = new Session();
    allocSession.connect();
    await allocSession.post('HeapProfiler.enable');
  }
  await allocSession.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const answer = await request();
  const { profile } = await allocSession.post('HeapProfiler.stopSampling');
  const sums = allocs[kind];
  const walk = (node) => {
    const self = node.selfSize;
    if (self) {
      const { functionName, url, lineNumber } = node.callFrame;
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/packages\//, '')}:${lineNumber + 1}`;
      sums.set(key, (sums.get(key) ?? 0) + self);
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return answer;
}

const results = [];
for (const transport of transports) {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-runs-bench-'));
  const host = createHost({
    config: {
      server: { host: '127.0.0.1', port: 0, transport },
      auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
      runs: { codeTimeoutMs: 600_000, maxTimeoutSeconds: 3600 },
      log: { level: 'error' },
    },
    database: sqliteDatabase({ path: join(dir, 'bench.db') }),
    modules: [...coreModules, bareModule],
  });

  const json = (method, path, token, body) => request(host.url, method, path, token, body);

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

    for (const format of formats) {
      const runInit = { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ format }) };
      const split = format === 'sse' ? (text) => text.split('\n\n').filter(Boolean).map((frame) => `${frame}\n\n`) : (text) => text.split('\n').filter(Boolean).map((line) => `${line}\n`);
      const completed = format === 'sse' ? (text) => text.includes('event: run_complete') && !text.includes('event: block_error') : (text) => text.includes('"type":"run_complete"') && !text.includes('"type":"block_error"');
      bareType = format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson';
      const fixed = [];
      const runs = [];
      const bares = [];
      /** `--threads`: CPU ms by thread id, summed over the measured rounds, of the run, the run with no chunks and the bare response. */
      const threadSums = { run: new Map(), fixed: new Map(), bare: new Map() };
      const addThreads = (sums, perThread) => {
        if (perThread) for (const [tid, ms] of perThread) sums.set(tid, (sums.get(tid) ?? 0) + ms);
      };
      const prof = await profiler(`${transport}-${format}`);
      let cpu = null;
      // Warm-up rounds of each (the JIT), then interleaved rounds.
      for (let round = -warmup; round < rounds; round++) {
        if (round === 0) {
          await prof.start();
          cpu = process.cpuUsage();
        }
        const run = await allocated('run', round >= 0, () => timed(`${host.url}/documents/${doc.id}/run`, runInit));
        if (run.status !== 200) throw new Error(`run answered ${run.status}: ${run.text.slice(0, 300)}`);
        if (!completed(run.text)) throw new Error(`the run did not complete: ${run.text.slice(-500)}`);
        const frames = split(run.text);
        bareFrames = frames;
        const bare = await allocated('bare', round >= 0, () => timed(`${host.url}/bench/bare-stream`, {}));
        if (bare.text !== run.text) throw new Error('the bare response differs from the run response');
        const baseline = await timed(`${host.url}/documents/${empty.id}/run`, runInit);
        if (round >= 0) {
          addThreads(threadSums.run, run.perThread);
          addThreads(threadSums.fixed, baseline.perThread);
          addThreads(threadSums.bare, bare.perThread);
          fixed.push(baseline);
          runs.push({ ms: run.ms, cpuMs: run.cpuMs, mainMs: run.mainMs, events: frames.length, bytes: Buffer.byteLength(run.text) });
          bares.push({ ms: bare.ms, cpuMs: bare.cpuMs, mainMs: bare.mainMs, events: frames.length });
        }
      }
      const used = process.cpuUsage(cpu);
      await prof.stop((used.user + used.system) / 1000);
      const runMs = median(runs.map((r) => r.ms));
      const bareMs = median(bares.map((r) => r.ms));
      const fixedMs = median(fixed.map((r) => r.ms));
      // CPU time of the whole process (every thread, the client included) while each request ran:
      // steadier than wall time on a loaded machine.
      const runCpu = median(runs.map((r) => r.cpuMs));
      const bareCpu = median(bares.map((r) => r.cpuMs));
      const fixedCpu = median(fixed.map((r) => r.cpuMs));
      const cpuRatio = bareCpu / Math.max(0.001, runCpu - fixedCpu);
      const runMain = median(runs.map((r) => r.mainMs));
      const bareMain = median(bares.map((r) => r.mainMs));
      const fixedMain = median(fixed.map((r) => r.mainMs));
      const mainRatio = bareMain / Math.max(0.001, runMain - fixedMain);
      const events = runs[0].events;
      const runRate = events / (runMs / 1000);
      const bareRate = events / (bareMs / 1000);
      const perEventRate = (events - 5) / Math.max(0.001, (runMs - fixedMs) / 1000);
      results.push({ transport, format, runMs, bareMs, fixedMs, runRate, bareRate, perEventRate, cpuRatio, mainRatio });
      console.log(`runs streaming bench (${transport} transport, ${format}, ${chunks} chunks, ${events} events, ${(runs[0].bytes / 1024).toFixed(0)} KiB, median of ${rounds} rounds)\n`);
      console.log(`  run (code block → event log → ${format.padEnd(6)})  ${runMs.toFixed(1).padStart(8)} ms  ${Math.round(runRate).toLocaleString('en').padStart(10)} events/s`);
      console.log(`  bare ${format.padEnd(6)} of the same bytes        ${bareMs.toFixed(1).padStart(8)} ms  ${Math.round(bareRate).toLocaleString('en').padStart(10)} events/s`);
      console.log(`  run with no chunks (fixed cost)       ${fixedMs.toFixed(1).padStart(8)} ms`);
      console.log(`  streaming path alone (run − fixed)    ${(runMs - fixedMs).toFixed(1).padStart(8)} ms  ${Math.round(perEventRate).toLocaleString('en').padStart(10)} events/s`);
      console.log(`\n  run / bare, whole run:        ${(runRate / bareRate).toFixed(2)}`);
      console.log(`  run / bare, per-event cost:   ${(perEventRate / bareRate).toFixed(2)} (target: at least 0.50)`);
      console.log(`  CPU ms, process: run ${runCpu.toFixed(1)}, no chunks ${fixedCpu.toFixed(1)}, bare ${bareCpu.toFixed(1)}; bare / (run − no chunks): ${cpuRatio.toFixed(2)}`);
      console.log(`  CPU ms, main thread: run ${runMain.toFixed(1)}, no chunks ${fixedMain.toFixed(1)}, bare ${bareMain.toFixed(1)}; bare / (run − no chunks): ${mainRatio.toFixed(2)}\n`);
      if (args['alloc-prof']) {
        for (const kind of ['run', 'bare']) {
          const rows = [...allocs[kind]].sort((a, b) => b[1] - a[1]);
          const total = rows.reduce((sum, [, bytes]) => sum + bytes, 0);
          console.log(`  allocated per round, ${kind}: ${(total / rounds / 1024).toFixed(0)} KiB (sampled); by function:`);
          for (const [key, bytes] of rows.slice(0, 18)) console.log(`    ${(bytes / rounds / 1024).toFixed(0).padStart(7)} KiB  ${key}`);
          allocs[kind].clear();
        }
        console.log('');
      }
      if (args.threads) {
        // Every thread that used at least 0.2 ms per round in any of the three: the main thread
        // first, then by thread id (V8's platform threads, which collect garbage, start right
        // after the main thread; the sandbox's workers and libuv's pool come later).
        const tids = [...new Set([...threadSums.run.keys(), ...threadSums.fixed.keys(), ...threadSums.bare.keys()])].sort((a, b) => Number(a) - Number(b));
        console.log('  CPU ms per round by thread (run, no chunks, bare):');
        for (const tid of tids) {
          const [r, f, b] = ['run', 'fixed', 'bare'].map((k) => (threadSums[k].get(tid) ?? 0) / rounds);
          if (Math.max(r, f, b) < 0.2) continue;
          const name = tid === String(process.pid) ? 'main' : tid;
          console.log(`    ${name.padStart(8)}  ${r.toFixed(1).padStart(6)} ${f.toFixed(1).padStart(6)} ${b.toFixed(1).padStart(6)}`);
        }
        console.log('');
      }
    }
  } finally {
    await host.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (results.length > 1) {
  console.log('summary (per-event cost against the bare response of the same run; target at least 0.50)\n');
  console.log('  transport  format   run ms  bare ms  fixed ms   streaming events/s   bare events/s   whole   per-event   per-event CPU: process  main thread');
  for (const r of results) {
    console.log(
      `  ${r.transport.padEnd(9)}  ${r.format.padEnd(6)} ${r.runMs.toFixed(1).padStart(7)} ${r.bareMs.toFixed(1).padStart(8)} ${r.fixedMs.toFixed(1).padStart(9)}   ${Math.round(r.perEventRate).toLocaleString('en').padStart(18)}   ${Math.round(r.bareRate).toLocaleString('en').padStart(13)}   ${(r.runRate / r.bareRate).toFixed(2).padStart(5)}   ${(r.perEventRate / r.bareRate).toFixed(2).padStart(9)}   ${r.cpuRatio.toFixed(2).padStart(21)}  ${r.mainRatio.toFixed(2).padStart(11)}`,
    );
  }
}
