#!/usr/bin/env node
// Runs under abuse (issue 23): what code blocks that never stop emitting, or never stop at all,
// do to the host and to another team's runs. One host in this process (its RSS is this process's).
//
//   pnpm bench:runs-abuse           (builds the packages first)
//   node bench/runs-abuse.mjs [--db sqlite|postgres] [--postgres-url postgres://...] [--runs 200] [--loops 8]
//
// 1. Baseline: the victim team's trivial run (one code block, `return 1 + 1`, `stream: false`),
//    --runs times one after the other: p50/p99.
// 2. Flood: --loops concurrent runs of `for (;;) emit("x")` from the attacker's team, with the
//    product's default quotas: how each ends, the events it stored, the time they took, the peak
//    RSS over the RSS before, and the slowest `/healthz` answer while they ran (polled every
//    100 ms).
// 3. Spin: the attacker's team keeps --loops runs of `for (;;) {}` in flight (each stopped by
//    runs.codeTimeoutMs, started again at once) while the victim's team runs its trivial run
//    --runs times: p50/p99 against the baseline.
// Not a test: it prints figures and never fails on them.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { request } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    'postgres-url': { type: 'string', default: process.env.TRELLIS_BENCH_POSTGRES_URL ?? '' },
    runs: { type: 'string', default: '200' },
    loops: { type: 'string', default: '8' },
  },
});
const runs = Number(args.runs);
const loops = Number(args.loops);

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench:runs-abuse\` does).`);
    process.exit(1);
  }
}
const { coreModules } = await import('@trellis/core');
const { createHost } = await import('@trellis/host');

async function database() {
  if (args.db === 'postgres') {
    if (!args['postgres-url']) throw new Error('--db postgres needs --postgres-url (or TRELLIS_BENCH_POSTGRES_URL)');
    const { postgresDatabase } = await import(pathToFileURL(join(here, '..', 'packages', 'adapters', 'db-postgres', 'dist', 'index.js')).href);
    return postgresDatabase({ url: args['postgres-url'], pool: { min: 2, max: 10 } });
  }
  const { sqliteDatabase } = await import('@trellis/db-sqlite');
  return sqliteDatabase({ path: join(mkdtempSync(join(tmpdir(), 'trellis-runs-abuse-')), 'bench.db') });
}

const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: 'uws' },
    auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
    log: { level: 'fatal' },
    billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1_000_000_000, monthlyPrice: 0, yearlyPrice: 0 } } },
  },
  database: await database(),
  modules: coreModules,
});
await host.start();
const url = host.url;

const code = (text) => ({ type: 'doc', content: [{ type: 'codeBlock', attrs: { id: 'code-c', name: 'c', language: 'javascript' }, content: [{ type: 'text', text }] }] });
async function team(label) {
  const user = await request(url, 'POST', '/auth/register', undefined, { email: `${label}-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery' });
  const project = await request(url, 'POST', '/project', user.token, { name: `${label} ${Date.now()}`, tools: [], access: 'team' });
  const documentOf = async (text) => (await request(url, 'POST', '/documents', user.token, { projectId: project.id, title: label, content: code(text) })).id;
  return { token: user.token, documentOf };
}
const run = (who, documentId) => request(url, 'POST', `/documents/${documentId}/run`, who.token, { stream: false });

const victim = await team('victim');
const attacker = await team('attacker');
const trivial = await victim.documentOf('return 1 + 1');
const flood = await attacker.documentOf('for (;;) emit("x")');
const spin = await attacker.documentOf('for (;;) {}');

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
async function victimRuns() {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const answer = await run(victim, trivial);
    if (answer.status !== 'completed') throw new Error(`the victim's run ${answer.status}: ${JSON.stringify(answer.error)}`);
    times.push(performance.now() - started);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: Math.max(...times) };
}
const ms = (n) => `${n.toFixed(0).padStart(6)} ms`;
const mib = (n) => `${(n / 1024 / 1024).toFixed(0)} MiB`;

// Warm up: both teams' first runs (sandbox workers started, statements prepared).
await Promise.all([run(victim, trivial), run(attacker, await attacker.documentOf('return 0'))]);
for (let i = 0; i < 20; i++) await run(victim, trivial);

const alone = await victimRuns();

// The flood.
globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
let rssPeak = rssBefore;
let healthMax = 0;
let healthCount = 0;
let flooding = true;
const sampler = (async () => {
  while (flooding) {
    const started = performance.now();
    const response = await fetch(`${url}/healthz`);
    await response.text();
    if (response.status !== 200) throw new Error(`/healthz answered ${response.status}`);
    healthMax = Math.max(healthMax, performance.now() - started);
    healthCount += 1;
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
})();
const floodStarted = performance.now();
const floods = await Promise.all(Array.from({ length: loops }, () => run(attacker, flood)));
const floodMs = performance.now() - floodStarted;
flooding = false;
await sampler;
const stored = [];
for (const answer of floods) {
  // The run's log, replayed as NDJSON: its block_chunk events.
  const response = await fetch(`${url}/documents/${flood}/runs/${answer.runId}/events?format=ndjson`, { headers: { authorization: `Bearer ${attacker.token}` } });
  const text = await response.text();
  stored.push(text.split('\n').filter((line) => line.includes('"type":"block_chunk"')).length);
}
const endings = [...new Set(floods.map((f) => `${f.status}/${f.error?.code}`))].join(', ');

// The spin.
let spinning = true;
let spins = 0;
const spinner = async () => {
  while (spinning) {
    await run(attacker, spin);
    spins += 1;
  }
};
const spinners = Array.from({ length: loops }, spinner);
await new Promise((resolve) => setTimeout(resolve, 1_000));
const attacked = await victimRuns();
spinning = false;
await Promise.all(spinners);

console.log(`runs under abuse (${args.db}, uWS, default runs settings: codeTimeoutMs 10,000, sandbox workers ${'= CPUs (max 4)'}, ${loops} attacker runs)\n`);
console.log(`  victim's trivial run alone (baseline), ${runs} runs      p50 ${ms(alone.p50)}   p99 ${ms(alone.p99)}   max ${ms(alone.max)}`);
console.log(`  the same while the attacker runs ${loops} endless loops      p50 ${ms(attacked.p50)}   p99 ${ms(attacked.p99)}   max ${ms(attacked.max)}   (p99 ${(attacked.p99 / alone.p99).toFixed(1)}x the baseline; ${spins} loop runs ended meanwhile)`);
console.log(`  ${loops} concurrent emit loops: ended ${endings} in ${(floodMs / 1000).toFixed(1)} s`);
console.log(`    RSS before ${mib(rssBefore)}, peak ${mib(rssPeak)} (+${mib(rssPeak - rssBefore)})`);
console.log(`    /healthz meanwhile: ${healthCount} answers, slowest ${ms(healthMax)}`);
console.log(`    block_chunk events stored per run: ${[...new Set(stored)].map((n) => n.toLocaleString('en-US')).join(', ')}`);
await host.stop();
process.exit(0);
