#!/usr/bin/env node
// Serialisation cost of the hot routes' responses, before and after response shapes became one
// TypeBox declaration each (issue 30): a run record (GET /documents/:id/runs/:runId, the body of
// every stored run's answer), a block with its content (GET /block/:id) and a page of 20 runs
// (GET /documents/:id/runs), each as the dispatcher sends it: mapper, then JSON.stringify.
//
//   pnpm build && node bench/response-shapes.mjs [--iterations 200000] [--rounds 5]
//
// "before" is the mapper code as it was at 62c223b (copied below verbatim, as JavaScript: its
// `…View` interface and `Record<string, unknown>` return types were compile-time only); "after" is
// the built @trellis/core. The declarations add no runtime work: the type check happens at compile
// time, and the schema is read once when /openapi.json is built. For comparison, the line
// "after + runtime check" adds what checking each answer against its schema at run time would
// cost (AJV, compiled once, formats checked), the alternative this design avoids.
// Figures are medians over interleaved rounds, in microseconds per response; ratios are
// after / before (1.00: same cost). Prints figures; never fails on them.
import { performance } from 'node:perf_hooks';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { blockWithContentSchema, runPageSchema, runRecordSchema, toBlockView, toRunView } from '@trellis/core';

const { values: args } = parseArgs({ options: { iterations: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '5' } } });
const iterations = Number(args.iterations);
const rounds = Number(args.rounds);

// --- before: the mappers at 62c223b -------------------------------------------------------------
function publicSessionBefore(session) {
  return {
    blockId: session.blockId,
    blockType: session.blockType,
    blockName: session.blockName,
    status: session.status,
    output: session.output,
    ...(session.error ? { error: session.error } : {}),
    ...(session.console?.length ? { console: session.console } : {}),
    ...(session.path !== undefined ? { path: session.path } : {}),
    ...(session.iteration !== undefined ? { iteration: session.iteration } : {}),
    ...(session.branch !== undefined ? { branch: session.branch } : {}),
    ...(session.attempts?.length ? { attempts: session.attempts } : {}),
    ...(session.fallback ? { fallback: true } : {}),
    ...(session.childRunId ? { childRunId: session.childRunId } : {}),
  };
}

function toRunViewBefore(run) {
  return {
    id: run.id,
    documentId: run.documentId,
    projectId: run.projectId,
    userId: run.userId,
    source: run.source,
    version: run.version,
    status: run.status,
    inputs: run.inputs,
    sessions: run.sessions.map(publicSessionBefore),
    globalCtx: run.ctx,
    output: run.output ?? null,
    error: run.error,
    waiting: run.waiting,
    usage: run.usage,
    reservedCredits: run.reservedCredits,
    usedCredits: run.usedCredits,
    timeout: run.timeoutSeconds,
    timedOut: run.timedOut,
    attempts: run.attempt,
    parentRunId: run.parentRunId ?? null,
    parentBlockId: run.parentBlockId ?? null,
    depth: run.depth ?? 0,
    budget: run.budgetCredits === null || run.budgetCredits === undefined ? null : { credits: run.budgetCredits },
    budgetRootRunId: run.budgetRootId ?? null,
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    duration: run.durationMs,
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
  };
}

const blockStatus = (block) => (block.trashedAt ? 'trashed' : block.latestVersion ? 'deployed' : 'draft');
function toBlockViewBefore(block, doc, withContent = false) {
  return {
    id: block.id,
    projectId: block.project.id,
    name: block.name,
    description: block.description,
    type: block.type,
    status: blockStatus(block),
    contentHash: doc?.contentHash ?? null,
    ...(withContent ? { content: doc?.content ?? { type: 'doc' } } : {}),
    access: block.access,
    deployType: block.deployType,
    cover: block.cover,
    inputs: block.inputs ?? [],
    budget: block.budgetCredits === null || block.budgetCredits === undefined ? null : { credits: block.budgetCredits },
    version: block.latestVersion,
    deployedAt: block.deployedAt?.toISOString() ?? null,
    installedFrom: block.installedFromBlockId && block.installedVersion ? { blockId: block.installedFromBlockId, version: block.installedVersion } : null,
    trashedAt: block.trashedAt?.toISOString() ?? null,
    createdAt: block.createdAt.toISOString(),
    updatedAt: block.updatedAt.toISOString(),
  };
}

// --- fixtures: entities as the ORM hands them to the mappers ------------------------------------
const id = (n) => `0190c0de-0000-7000-8000-${String(n).padStart(12, '0')}`;
const at = new Date('2026-11-28T12:00:00.000Z');
const run = (n) => ({
  id: id(n),
  documentId: id(1),
  projectId: id(2),
  userId: id(3),
  source: 'api',
  version: '3',
  status: 'completed',
  inputs: { topic: 'quarterly report', count: 3 },
  sessions: ['input', 'llm', 'code', 'output'].map((type, i) => ({
    blockId: `b${i}`,
    blockType: type,
    blockName: `${type} ${i}`,
    status: 'completed',
    output: type === 'llm' ? 'A paragraph of generated text, long enough to look like a model answer in a run record.' : JSON.stringify({ value: i }),
    ...(type === 'code' ? { console: [{ level: 'log', text: 'log line' }] } : {}),
  })),
  ctx: [{ name: 'topic', blockId: 'b0', blockType: 'input', value: 'quarterly report' }],
  output: { text: 'Final answer.' },
  error: null,
  waiting: null,
  usage: { models: { 'gpt-4o-mini': { inputTokens: 420, outputTokens: 180, calls: 1 } }, sandboxMs: 3 },
  reservedCredits: 10,
  usedCredits: 4,
  timeoutSeconds: 300,
  timedOut: false,
  attempt: 1,
  parentRunId: null,
  parentBlockId: null,
  depth: 0,
  budgetCredits: null,
  budgetRootId: id(n),
  startedAt: at,
  finishedAt: at,
  durationMs: 812,
  createdAt: at,
  updatedAt: at,
});
const block = {
  id: id(1),
  project: { id: id(2) },
  name: 'Report writer',
  description: 'Writes the quarterly report',
  type: 'workflow',
  access: 'team',
  deployType: null,
  cover: null,
  inputs: [{ name: 'topic', type: 'string', required: true }],
  budgetCredits: 500,
  latestVersion: '3',
  deployedAt: at,
  installedFromBlockId: null,
  installedVersion: null,
  trashedAt: null,
  createdAt: at,
  updatedAt: at,
};
const doc = {
  contentHash: 'a1b2c3d4',
  content: { type: 'doc', content: Array.from({ length: 12 }, (_, i) => ({ type: 'paragraph', attrs: { id: `p${i}` }, content: [{ type: 'text', text: `Paragraph ${i} of the workflow's page.` }] })) },
};
const oneRun = run(10);
const twenty = Array.from({ length: 20 }, (_, i) => run(100 + i));

const ajv = addFormats.default(new Ajv2020({ strict: false }));
const checkRun = ajv.compile(runRecordSchema);
const checkBlock = ajv.compile(blockWithContentSchema);
const checkPage = ajv.compile(runPageSchema);
const checked = (check, value) => {
  if (!check(value)) throw new Error(`a response does not match its declaration: ${JSON.stringify(check.errors?.[0])}`);
  return value;
};

const cases = [
  {
    name: 'run record',
    before: () => JSON.stringify(toRunViewBefore(oneRun)),
    after: () => JSON.stringify(toRunView(oneRun)),
    checked: () => JSON.stringify(checked(checkRun, toRunView(oneRun))),
  },
  {
    name: 'block with content',
    before: () => JSON.stringify(toBlockViewBefore(block, doc, true)),
    after: () => JSON.stringify(toBlockView(block, doc, true)),
    checked: () => JSON.stringify(checked(checkBlock, toBlockView(block, doc, true))),
  },
  {
    name: 'page of 20 runs',
    before: () => JSON.stringify({ items: twenty.map(toRunViewBefore), total: 20, page: 1, size: 20 }),
    after: () => JSON.stringify({ items: twenty.map(toRunView), total: 20, page: 1, size: 20 }),
    checked: () => JSON.stringify(checked(checkPage, { items: twenty.map(toRunView), total: 20, page: 1, size: 20 })),
  },
];

// Same bytes before and after: the declarations changed no answer.
for (const c of cases) {
  if (c.before() !== c.after()) throw new Error(`${c.name}: the answer changed`);
  c.checked();
}

function time(fn, n) {
  let sink = 0;
  const start = performance.now();
  for (let i = 0; i < n; i++) sink += fn().length;
  const ms = performance.now() - start;
  if (sink === 0) throw new Error('nothing serialised');
  return (ms * 1000) / n;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`response serialisation, µs per response (median of ${rounds} interleaved rounds, ${iterations} each; load ${loadavg()[0].toFixed(1)})`);
console.log('route'.padEnd(22), 'before'.padStart(9), 'after'.padStart(9), 'after/before'.padStart(13), '+runtime check'.padStart(15), 'ratio'.padStart(7));
for (const c of cases) {
  const n = c.name === 'page of 20 runs' ? Math.max(1000, Math.floor(iterations / 20)) : iterations;
  for (const kind of ['before', 'after', 'checked']) time(c[kind], Math.floor(n / 10)); // warm up
  const samples = { before: [], after: [], checked: [] };
  for (let r = 0; r < rounds; r++) for (const kind of ['before', 'after', 'checked']) samples[kind].push(time(c[kind], n));
  const before = median(samples.before);
  const after = median(samples.after);
  const withCheck = median(samples.checked);
  console.log(c.name.padEnd(22), before.toFixed(2).padStart(9), after.toFixed(2).padStart(9), (after / before).toFixed(2).padStart(13), withCheck.toFixed(2).padStart(15), (withCheck / before).toFixed(2).padStart(7));
}
