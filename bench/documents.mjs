#!/usr/bin/env node
// Latency of a `str_replace` edit on a 1 MB document through the real HTTP host
// (POST /documents/{id}/edit), p50 and p99, on SQLite and (with a URL) PostgreSQL, against a
// baseline measured in the same run and interleaved with it: one transaction that writes the same
// number of bytes through the host's own database connection with the value bound as a parameter
// (what the database alone costs for the write). Edits are sequential (one client), after warm-up
// edits, so the figures are per-edit latency, not throughput.
//
//   pnpm bench:documents            (builds the packages first)
//   node bench/documents.mjs [--rounds 60] [--warmup 15] [--size-kb 1024] [--transport uws|node]
//                            [--db sqlite,postgres] [--postgres-url postgres://...]
//
// Targets (issue 14): p50 at most 20 ms on SQLite, at most 40 ms on PostgreSQL. Not a test: it
// prints figures and ratios and never fails on them. The machine is shared: read the ratios.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '15' },
    'size-kb': { type: 'string', default: '1024' },
    transport: { type: 'string', default: 'uws' },
    db: { type: 'string', default: 'sqlite,postgres' },
    'postgres-url': { type: 'string', default: process.env.TRELLIS_BENCH_POSTGRES_URL ?? process.env.TRELLIS_TEST_POSTGRES_URL ?? '' },
  },
});
const rounds = Number(args.rounds);
const warmup = Number(args.warmup);
const sizeBytes = Number(args['size-kb']) * 1024;
const targets = { sqlite: 20, postgres: 40 };

for (const pkg of ['core', 'host', 'adapters/db-sqlite']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first (\`pnpm bench:documents\` does).`);
    process.exit(1);
  }
}

const { coreModules, ormServiceIdentifier } = await import('@trellis/core');
const { createHost } = await import('@trellis/host');

const dir = mkdtempSync(join(tmpdir(), 'trellis-documents-bench-'));

async function database(kind) {
  if (kind === 'postgres') {
    // Not a dependency of the bench package: loaded from the workspace's build.
    const { postgresDatabase } = await import(pathToFileURL(join(here, '..', 'packages', 'adapters', 'db-postgres', 'dist', 'index.js')).href);
    return postgresDatabase({ url: args['postgres-url'], pool: { min: 2, max: 10 } });
  }
  const { sqliteDatabase } = await import('@trellis/db-sqlite');
  return sqliteDatabase({ path: join(dir, `bench-${Date.now()}.db`) });
}

const config = {
  server: { host: '127.0.0.1', port: 0, transport: args.transport },
  auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' },
  log: { level: 'fatal' },
};

async function json(url, method, path, token, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await response.json();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed).slice(0, 300)}`);
  return parsed;
}

/** About `bytes` of rich text: 1 KB paragraphs with a bold run each; block `p-mid` carries the counter. */
function bigDocument(bytes) {
  const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';
  const text = filler.repeat(8).slice(0, 900);
  const count = Math.max(2, Math.round(bytes / 1024));
  const content = [];
  for (let i = 0; i < count; i++) {
    const id = i === Math.floor(count / 2) ? 'p-mid' : `p-${i}`;
    const tail = id === 'p-mid' ? ' counter-0 end' : '';
    content.push({ type: 'paragraph', attrs: { id }, content: [{ type: 'text', text: `${i}: ${text}` }, { type: 'text', text: ` bold ${i}${tail}`, marks: [{ type: 'bold' }] }] });
  }
  return { type: 'doc', content };
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
};
const ms = (value) => `${value.toFixed(1).padStart(6)} ms`;

async function measure(kind) {
  const host = createHost({ config, database: await database(kind), modules: coreModules });
  await host.start();
  try {
    const orm = host.kernel.container.get(ormServiceIdentifier);
    const knex = orm.em.getConnection().getKnex();
    const user = await json(host.url, 'POST', '/auth/register', undefined, { email: `bench-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery' });
    const project = await json(host.url, 'POST', '/project', user.token, { name: `bench ${Date.now()}`, tools: [], access: 'team' });
    const content = bigDocument(sizeBytes);
    const created = await json(host.url, 'POST', '/documents', user.token, { projectId: project.id, title: 'big', content });
    const stored = await json(host.url, 'GET', `/documents/${created.id}/content`, user.token);
    const bytes = Buffer.byteLength(JSON.stringify(stored.content ?? content));
    let version = created.content_hash ?? stored.content_hash;
    let counter = 0;
    const edit = async () => {
      const next = counter + 1;
      const started = performance.now();
      const result = await json(host.url, 'POST', `/documents/${created.id}/edit`, user.token, {
        base_version: version,
        mode: 'commands',
        commands: [{ op: 'str_replace', blockId: 'p-mid', old_str: `counter-${counter} `, new_str: `counter-${next} ` }],
      });
      const took = performance.now() - started;
      version = result.version;
      counter = next;
      return took;
    };
    // The baseline: the same number of bytes written in one transaction through the host's own
    // connection, bound as a parameter (never inlined into the SQL text).
    const table = 'bench_raw_document_write';
    await knex.raw(`create table if not exists ${table} (id integer primary key, body text not null)`);
    await knex.raw(`delete from ${table}`);
    await knex.raw(`insert into ${table} (id, body) values (1, '')`);
    const payload = JSON.stringify(content);
    let flip = 0;
    const raw = async () => {
      const body = payload + ' '.repeat(flip++ % 2);
      const started = performance.now();
      await knex.transaction(async (trx) => {
        await trx.raw(`update ${table} set body = ? where id = 1`, [body]);
      });
      return performance.now() - started;
    };
    for (let i = 0; i < warmup; i++) {
      await edit();
      await raw();
    }
    const edits = [];
    const raws = [];
    for (let i = 0; i < rounds; i++) {
      // Interleaved, order alternating, so drift in machine load hits both alike.
      if (i % 2 === 0) {
        edits.push(await edit());
        raws.push(await raw());
      } else {
        raws.push(await raw());
        edits.push(await edit());
      }
    }
    // The stored content is the one the edits produced (the bench measures real writes).
    const final = await json(host.url, 'GET', `/documents/${created.id}/content`, user.token);
    if (final.content_hash !== version || !JSON.stringify(final.content).includes(`counter-${counter} `)) throw new Error('the final content is not the one the edits produced');
    await knex.raw(`drop table ${table}`);
    return { bytes, edits, raws };
  } finally {
    await host.stop().catch(() => undefined);
  }
}

console.log(`documents bench: str_replace on a ${args['size-kb']} KB document, ${args.transport} transport, ${rounds} rounds after ${warmup} warm-up edits; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
try {
  for (const kind of args.db.split(',').filter(Boolean)) {
    if (kind === 'postgres' && !args['postgres-url']) {
      console.log(`  postgres: skipped (no --postgres-url or TRELLIS_BENCH_POSTGRES_URL)`);
      continue;
    }
    const { bytes, edits, raws } = await measure(kind);
    const e50 = percentile(edits, 50);
    const r50 = percentile(raws, 50);
    console.log(`  ${kind} (${(bytes / 1024).toFixed(0)} KB stored)`);
    console.log(`    str_replace via HTTP                 p50 ${ms(e50)}   p99 ${ms(percentile(edits, 99))}`);
    console.log(`    baseline: raw bound write, same bytes p50 ${ms(r50)}   p99 ${ms(percentile(raws, 99))}`);
    console.log(`    edit / raw write: ${(e50 / r50).toFixed(2)}x   target: p50 at most ${targets[kind]} ms -> ${(e50 / targets[kind]).toFixed(2)} of target (${e50 <= targets[kind] ? 'met' : 'not met'})\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
