#!/usr/bin/env node
// CodeSandbox benchmark: what a code block costs in the embedded QuickJS sandbox.
//
//   pnpm --filter @trellis/core build && node bench/sandbox.mjs [--runs 2000] [--emits 10000] [--workers 2] [--rounds 3]
//
// - runs/s of a trivial function body (`return inputs.a + inputs.b`), one run at a time and with
//   as many runs in flight as there are workers;
// - the latency of one trivial run after a pause of 5 ms (how a workflow's code block meets the
//   sandbox: its worker idle since the last run), median and 90th percentile of --paused runs;
// - emits/s of a body that calls `emit()` --emits times, delivered to `onEmit` on this thread.
// The baseline in the same run is the same work done unsandboxed in this process (a `new Function`
// body, and a plain loop calling the same onEmit), so the ratios show the price of isolation.
//
// - CPU per trivial run: the process's CPU time (all threads) over the 2-in-flight runs, split into
//   this (main) thread's and the rest (the worker threads, plus V8's helper threads), from
//   /proc/self/task (Linux; without it only the total is shown). CPU is steadier than runs/s on a
//   shared machine.
// Not a test: it prints figures and never fails on them.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { QuickJsCodeSandbox } from '@trellis/core';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '2000' },
    emits: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    paused: { type: 'string', default: '500' },
  },
});
const runs = Number(args.runs);
const emits = Number(args.emits);
const workers = Number(args.workers);
const rounds = Number(args.rounds);
const request = { globals: { inputs: { a: 1, b: 2 } }, timeoutMs: 5_000, memoryBytes: 16 * 1024 * 1024 };
/** CPU time of this (main) thread in µs, from /proc (clock ticks of 10 ms), or undefined. */
const mainThreadCpuUs = () => {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
};
const processCpuUs = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const best = async (fn) => {
  let top = 0;
  for (let i = 0; i < rounds; i++) top = Math.max(top, await fn());
  return top;
};

const sandbox = new QuickJsCodeSandbox({ workers });
await sandbox.warmUp();
// Start every worker and load its module before measuring.
await Promise.all(Array.from({ length: workers }, () => sandbox.run({ ...request, code: 'return 0' })));

const trivial = 'return inputs.a + inputs.b';
const sequential = await best(async () => {
  const started = performance.now();
  for (let i = 0; i < runs; i++) await sandbox.run({ ...request, code: trivial });
  return runs / ((performance.now() - started) / 1000);
});
let cpu = { total: Infinity, main: Infinity };
const parallel = await best(async () => {
  const started = performance.now();
  const totalBefore = processCpuUs();
  const mainBefore = mainThreadCpuUs();
  let next = 0;
  const lane = async () => {
    while (next < runs) {
      next += 1;
      await sandbox.run({ ...request, code: trivial });
    }
  };
  await Promise.all(Array.from({ length: workers }, lane));
  const seconds = (performance.now() - started) / 1000;
  const total = (processCpuUs() - totalBefore) / runs;
  const main = mainBefore === undefined ? NaN : (mainThreadCpuUs() - mainBefore) / runs;
  // The round with the least CPU per run (the least disturbed by the machine's other work).
  if (total < cpu.total) cpu = { total, main };
  return runs / seconds;
});
// One run after a pause, as a workflow's code block meets the sandbox (its worker idle since the
// last run): the worker freed the last run's context and made the next one while it waited.
const paused = [];
for (let i = 0; i < Number(args.paused); i++) {
  await new Promise((resolve) => setTimeout(resolve, 5));
  const started = performance.now();
  await sandbox.run({ ...request, code: trivial });
  paused.push(performance.now() - started);
}
paused.sort((a, b) => a - b);
const bare = await best(async () => {
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const fn = new Function('inputs', trivial);
    JSON.parse(JSON.stringify(fn(request.globals.inputs)));
    await Promise.resolve();
  }
  return runs / ((performance.now() - started) / 1000);
});

let received = 0;
const onEmit = (text) => {
  received += text.length;
};
const emitCode = `for (let i = 0; i < ${emits}; i++) emit("chunk " + i); return ${emits}`;
const sandboxEmits = await best(async () => {
  const started = performance.now();
  await sandbox.run({ ...request, code: emitCode, onEmit });
  return emits / ((performance.now() - started) / 1000);
});
const bareEmits = await best(async () => {
  const started = performance.now();
  for (let i = 0; i < emits; i++) onEmit(`chunk ${i}`);
  await Promise.resolve();
  return emits / ((performance.now() - started) / 1000);
});
await sandbox.close();

console.log(`CodeSandbox (QuickJS/WASM, ${workers} worker thread(s)), best of ${rounds} rounds`);
console.log(`  trivial runs, one at a time:      ${fmt(sequential)} runs/s`);
console.log(`  trivial runs, ${workers} in flight:        ${fmt(parallel)} runs/s`);
console.log(
  `  CPU per trivial run (${workers} in flight): ${cpu.total.toFixed(0)} µs in all` +
    (Number.isNaN(cpu.main) ? '' : `, ${cpu.main.toFixed(0)} µs on this thread, ${(cpu.total - cpu.main).toFixed(0)} µs on the others (workers)`),
);
if (paused.length) console.log(`  one trivial run after a 5 ms pause: ${paused[Math.floor(paused.length / 2)].toFixed(3)} ms median, ${paused[Math.floor(paused.length * 0.9)].toFixed(3)} ms p90 (${paused.length} runs)`);
console.log(`  baseline, unsandboxed new Function: ${fmt(bare)} runs/s  (sandbox: 1/${(bare / parallel).toFixed(0)} of it)`);
console.log(`  emits delivered to onEmit:        ${fmt(sandboxEmits)} emits/s (${fmt(emits)} per run)`);
console.log(`  baseline, plain loop to onEmit:   ${fmt(bareEmits)} emits/s  (sandbox: 1/${(bareEmits / sandboxEmits).toFixed(0)} of it)`);
console.log(`  (${fmt(received)} characters received in all)`);
