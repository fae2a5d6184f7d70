#!/usr/bin/env node
// What importing a package costs a process: CPU time (user + system, `process.cpuUsage()` in a
// child of its own, so nothing is cached) and wall time of `await import()` of the built
// @trellis/core and @trellis/host, and how many module files that loads. Every `trellis` command,
// every worker and every CLI test's child process pays it before doing anything.
//
//   node bench/import.mjs [--runs 5] [--packages core,host] [--baseline <checkout>]
//
// Children run one after another on one core (`taskset -c 0` when present), the trees alternating
// with --baseline (another checkout of the repository with its packages built, e.g. a
// `git worktree` of main), and each figure is the median of the runs. Not a test: it prints
// figures and the ratio of the baseline to this tree, and never fails on them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, packages: { type: 'string', default: 'core,host' }, baseline: { type: 'string' } } });
const runs = Number(values.runs);
const trees = [['this tree', resolve(here, '..')], ...(values.baseline ? [['baseline', resolve(values.baseline)]] : [])];
const entry = (tree, name) => join(tree, 'packages', name, 'dist', 'index.js');
const recorder = join(here, '..', 'test', 'support', 'module-recorder.mjs');
const pin = (() => {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return ['taskset', '-c', '0'];
  } catch {
    return [];
  }
})();

for (const [, tree] of trees) {
  for (const name of values.packages.split(',')) {
    if (!existsSync(entry(tree, name))) throw new Error(`${entry(tree, name)} is missing: build the packages of ${tree} first (pnpm build).`);
  }
}

/** One child: CPU and wall milliseconds of `await import(file)`. */
function measure(file) {
  const script = `const w = performance.now(); const c = process.cpuUsage(); await import(${JSON.stringify(pathToFileURL(file).href)}); const u = process.cpuUsage(c); console.log(JSON.stringify({ cpu: (u.user + u.system) / 1000, wall: performance.now() - w }));`;
  const [command, ...args] = [...pin, process.execPath, '--input-type=module', '-e', script];
  const out = execFileSync(command, args, { cwd: tmpdir(), encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

/** The module files one import loads (ESM and CommonJS, from test/support/module-recorder.mjs). */
function moduleCount(file) {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-import-bench-'));
  try {
    const out = join(dir, 'modules.txt');
    execFileSync(process.execPath, ['--import', pathToFileURL(recorder).href, '--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(file).href)});`], { env: { ...process.env, TRELLIS_MODULE_RECORD: out }, stdio: 'ignore' });
    const files = new Set(readFileSync(out, 'utf8').split('\n').filter(Boolean));
    return { files: files.size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

console.log(`node ${process.version}, ${runs} runs each${pin.length ? ', pinned to core 0' : ''}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (const name of values.packages.split(',')) {
  const samples = new Map(trees.map(([label]) => [label, []]));
  for (let i = 0; i < runs; i++) for (const [label, tree] of trees) samples.get(label).push(measure(entry(tree, name)));
  const rows = trees.map(([label, tree]) => {
    const list = samples.get(label);
    return { label, cpu: median(list.map((s) => s.cpu)), wall: median(list.map((s) => s.wall)), ...moduleCount(entry(tree, name)) };
  });
  for (const row of rows) {
    console.log(`@trellis/${name.padEnd(5)} ${row.label.padEnd(9)}  CPU ${row.cpu.toFixed(0).padStart(5)} ms  wall ${row.wall.toFixed(0).padStart(5)} ms  ${String(row.files).padStart(5)} module files`);
  }
  if (rows.length === 2) {
    const [now, base] = rows;
    console.log(`@trellis/${name.padEnd(5)} baseline / this tree: CPU ${(base.cpu / now.cpu).toFixed(2)}x, wall ${(base.wall / now.wall).toFixed(2)}x, files ${(base.files / now.files).toFixed(2)}x`);
  }
}
