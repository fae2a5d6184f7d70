#!/usr/bin/env node
// Vector search benchmark: exact k-NN (limit 10) over 100,000 × 384-dimension vectors in the
// vector database's records table, unfiltered and with a 1 % selective filter (`tags` holds
// "rare"), on the sqlite-vec store (the default on SQLite) and on the in-process exact scan (the
// default on PostgreSQL without pgvector), against a brute-force Float32Array scan in this process
// as the ceiling (unfiltered searches on sqlite-vec use its vec0 mirror; filtered ones pick
// candidates from its term index first, compared with the same store scanning every row). Recall is measured
// against the brute force (exact search: 1.0 expected). First, writes: records/s through the
// API one by one and through the batch endpoint, beside raw sqlite-vec inserts in the same run. After a
// restart on the same file: the first query (raw sqlite-vec beside Trellis over HTTP) and exact top-k
// p50 over HTTP with the query embedded. Then the speech synthesizer's real-time factor (synthesis time / audio duration) when espeak-ng is installed.
//
//   pnpm bench:vector              (builds the packages first)
//   node bench/vector.mjs [--rows 100000] [--dim 384] [--queries 50] [--exact-queries 5] [--http-queries 200] [--writes 20000] [--embed-calls 300] [--only writes|embed]
//
// Not a test: it prints figures and never fails on them.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { aiGatewayServiceIdentifier, coreModules, createKernel, ExactScanVectorStore, HashingEmbedder, provide, UserService, VdbCollection, vectorStoreServiceIdentifier, vectorToBytes } from '@trellis/core';
import { createHost } from '@trellis/host';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '50' },
    'exact-queries': { type: 'string', default: '3' },
    'http-queries': { type: 'string', default: '200' },
    writes: { type: 'string', default: '20000' },
    only: { type: 'string', default: '' },
    'embed-calls': { type: 'string', default: '300' },
  },
});
const rows = Number(args.rows);
const dim = Number(args.dim);
const queries = Number(args.queries);
const limit = 10;

let seed = 42;
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const gaussian = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
const unit = () => {
  const v = new Float32Array(dim);
  let n = 0;
  for (let i = 0; i < dim; i++) n += (v[i] = gaussian()) ** 2;
  const s = 1 / Math.sqrt(n);
  for (let i = 0; i < dim; i++) v[i] *= s;
  return v;
};

/**
 * Writes: records per second through the HTTP API on the host's SQLite defaults (sqlite-vec), one
 * record per request and through the batch endpoint (1,000 records per request, embedded in
 * batches), beside raw sqlite-vec inserts of the same vectors into a vec0 table in the same
 * database (one row per statement and transaction, and all rows in one transaction).
 */
async function benchWrites(count) {
  const writeDir = mkdtempSync(join(tmpdir(), 'trellis-bench-vector-writes-'));
  const host = createHost({
    config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00', rateLimit: { perIp: 1_000_000, perAccount: 1_000_000 } }, database: { url: `sqlite:${join(writeDir, 'writes.db')}` }, server: { host: '127.0.0.1', port: 0 } },
    logger: pino({ level: 'error' }),
  });
  await host.start();
  try {
    const call = async (method, path, token, body) => {
      const response = await fetch(`${host.url}${path}`, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const { token } = await call('POST', '/auth/register', null, { email: 'writes@example.com', password: 'bench-password-123' });
    const text = (i) => `record ${i}: ${['password reset', 'billing invoice', 'team invite', 'export data'][i % 4]} question number ${i}`;
    console.log(`\nwrites: ${count.toLocaleString()} records of ${dim} dims (hashing embedder), host ${host.transport} over HTTP, SQLite with sqlite-vec`);
    const single = Math.min(500, count);
    let t0 = performance.now();
    for (let i = 0; i < single; i++) await call('POST', '/tool/vdb/One', token, { content: text(i), tags: ['t'] });
    const singleRate = single / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    const batchCpu = process.cpuUsage();
    for (let start = 0; start < count; start += 1000) {
      const records = Array.from({ length: Math.min(1000, count - start) }, (_, j) => ({ content: text(start + j), tags: ['t'], metadata: { i: start + j } }));
      await call('POST', '/tool/vdb/Many/batch', token, { records });
    }
    const batchRate = count / ((performance.now() - t0) / 1000);
    const batchCpuUsed = process.cpuUsage(batchCpu);
    // Raw sqlite-vec: the same texts' vectors (embedded beforehand, not timed) into a vec0 table.
    const embedder = new HashingEmbedder({ dimension: dim });
    const vectors = Array.from({ length: count }, (_, i) => vectorToBytes(embedder.embedOne(text(i))));
    const connection = host.kernel.fork().getConnection();
    await connection.execute(`CREATE VIRTUAL TABLE bench_raw USING vec0(record_id text primary key, embedding float[${dim}] distance_metric=cosine)`);
    const rawSingle = Math.min(3000, count);
    t0 = performance.now();
    for (let i = 0; i < rawSingle; i++) await connection.execute('INSERT INTO bench_raw (record_id, embedding) VALUES (?, ?)', [`a${i}`, vectors[i]]);
    const rawSingleRate = rawSingle / ((performance.now() - t0) / 1000);
    const em = host.kernel.fork();
    t0 = performance.now();
    const rawCpu = process.cpuUsage();
    await em.transactional(async (tx) => {
      for (let i = 0; i < count; i++) await tx.getConnection().execute('INSERT INTO bench_raw (record_id, embedding) VALUES (?, ?)', [`b${i}`, vectors[i]], 'run', tx.getTransactionContext());
    });
    const rawBatchRate = count / ((performance.now() - t0) / 1000);
    const rawCpuUsed = process.cpuUsage(rawCpu);
    const perRecord = (used) => (((used.user + used.system) / 1000 / count) * 1000).toFixed(0);
    console.log(`POST /tool/vdb/{c}, one record per request      ${singleRate.toFixed(0).padStart(8)} records/s   (${single} records)`);
    console.log(`POST /tool/vdb/{c}/batch, 1,000 per request     ${batchRate.toFixed(0).padStart(8)} records/s   (embedding included; CPU ${perRecord(batchCpuUsed)} µs/record, client included)`);
    console.log(`raw sqlite-vec, one row per transaction         ${rawSingleRate.toFixed(0).padStart(8)} records/s   (${rawSingle} rows, vectors given)`);
    console.log(`raw sqlite-vec, all rows in one transaction     ${rawBatchRate.toFixed(0).padStart(8)} records/s   (vectors given; CPU ${perRecord(rawCpuUsed)} µs/record)`);
    console.log(`  batch endpoint / one per request: ${(batchRate / singleRate).toFixed(1)}x   batch endpoint / raw one per transaction: ${(batchRate / rawSingleRate).toFixed(2)}x   / raw one transaction: ${(batchRate / rawBatchRate).toFixed(2)}x   (${loadAverageText()})`);
  } finally {
    await host.stop();
    rmSync(writeDir, { recursive: true, force: true });
  }
}

/** Sequential searches over HTTP, one at a time, from a client process of its own: wall time per query and the hits of the first `texts.length`. */
const remoteClient = `
const { url, token, texts, count, limit } = JSON.parse(process.argv[1]);
const times = [];
const ids = [];
for (let n = 0; n < count; n++) {
  const at = performance.now();
  const response = await fetch(url + '/tool/vdb/Bench/vector', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token }, body: JSON.stringify({ content: texts[n % texts.length], query: { limit } }) });
  const body = await response.json();
  times.push(performance.now() - at);
  if (response.status !== 200) { console.error(JSON.stringify(body)); process.exit(1); }
  if (n < texts.length) ids.push(body.items.map((item) => item.id));
}
process.stdout.write(JSON.stringify({ times, ids }));`;

/** Runs `remoteClient`; answers its figures and this (the host's) process's CPU per query meanwhile. */
function remoteSearches(url, token, texts, count) {
  return new Promise((resolve, reject) => {
    const cpu = process.cpuUsage();
    const child = spawn(process.execPath, ['--input-type=module', '-e', remoteClient, JSON.stringify({ url, token, texts, count, limit })], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the search client exited with ${code}`));
      const used = process.cpuUsage(cpu);
      const result = JSON.parse(out);
      resolve({ ...result, hostCpuMs: (used.user + used.system) / 1000 / count });
    });
  });
}

/**
 * After a restart, on the same database file: the first query of raw sqlite-vec (a fresh kernel
 * querying a vec0 table of the raw vectors, cosine) beside the first search of a host started on
 * it, over HTTP with the query embedded by the default embedder (the host loads the index saved
 * before the restart in the background from its start); then, once the index is ready, exact
 * top-k p50 over HTTP, embedding included, and recall, with this process's CPU time per query
 * beside raw sqlite-vec's (in process, no HTTP).
 */
async function afterRestart({ path, truth, percentile, loadAverage }) {
  const texts = Array.from({ length: 50 }, (_, i) => `how do I ${['reset a password', 'pay an invoice', 'invite a teammate', 'export my data', 'delete a record'][i % 5]} (question ${i})`);
  const embedder = new HashingEmbedder({ dimension: dim });
  console.log(`\nafter a restart (same file, ${rows.toLocaleString()} × ${dim}; machine: ${loadAverage()})`);

  const raw = createKernel({
    config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' } },
    database: sqliteDatabase({ path }),
    modules: coreModules,
    adapters: [provide(vectorStoreServiceIdentifier, new SqliteVecVectorStore({ memoryIndex: false }))],
    logger: pino({ level: 'warn' }),
  });
  await raw.start({ jobs: false });
  const rawQuery = async (q) =>
    (await raw.fork().getConnection().execute('SELECT record_id AS id FROM bench_vec_cosine WHERE embedding MATCH ? AND k = ? AND collection_id = ? ORDER BY distance', [vectorToBytes(q), limit, '00000000-0000-7000-8000-000000000001'], 'all')).map((row) => row.id);
  let t0 = performance.now();
  await rawQuery(embedder.embedOne(texts[0]));
  const rawFirst = performance.now() - t0;
  const rawTimes = [];
  const rawCpu = process.cpuUsage();
  for (let i = 0; i < Math.min(20, texts.length); i++) {
    t0 = performance.now();
    await rawQuery(embedder.embedOne(texts[i]));
    rawTimes.push(performance.now() - t0);
  }
  const rawCpuUsed = process.cpuUsage(rawCpu);
  const rawCpuPerQuery = (rawCpuUsed.user + rawCpuUsed.system) / 1000 / rawTimes.length;
  await raw.stop();

  t0 = performance.now();
  const host = createHost({
    config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00', rateLimit: { perIp: 1_000_000, perAccount: 1_000_000 } }, database: { url: `sqlite:${path}` }, server: { host: '127.0.0.1', port: 0 } },
    logger: pino({ level: 'error' }),
  });
  await host.start();
  const startMs = performance.now() - t0;
  try {
    const call = async (method, route, token, body) => {
      const response = await fetch(`${host.url}${route}`, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
      if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const loginAt = performance.now();
    const { token } = await call('POST', '/auth/login', null, { email: 'bench@example.com', password: 'bench-password-123' });
    const loginMs = performance.now() - loginAt;
    const searchHttp = async (content) => (await call('POST', '/tool/vdb/Bench/vector', token, { content, query: { limit } })).items.map((item) => item.id);
    const list = async () => {
      const at = performance.now();
      await call('GET', '/tool/vdb/Bench?limit=1', token);
      return performance.now() - at;
    };
    const listBefore = await list();
    t0 = performance.now();
    await searchHttp(texts[0]);
    const httpFirst = performance.now() - t0;
    const listDuring = await list();
    const store = host.kernel.get(vectorStoreServiceIdentifier);
    const during = [];
    for (let i = 1; i <= 3; i++) {
      t0 = performance.now();
      await searchHttp(texts[i]);
      during.push(performance.now() - t0);
    }
    t0 = performance.now();
    await store.idle?.();
    console.log(`host started in ${startMs.toFixed(0)} ms (login ${loginMs.toFixed(0)} ms); index ready ${(performance.now() - t0).toFixed(0)} ms after the 4th search`);
    console.log(`a list request (GET /tool/vdb/{c}?limit=1: auth, a count of the collection, one record; no search): ${listBefore.toFixed(0)} ms before the first search (while the saved index loads), ${listDuring.toFixed(0)} ms after it`);
    console.log(`first query: raw sqlite-vec (vec0, cosine) ${rawFirst.toFixed(1).padStart(8)} ms   Trellis over HTTP, embedding included ${httpFirst.toFixed(1).padStart(8)} ms   (next 3: ${during.map((ms) => ms.toFixed(0)).join(', ')} ms)`);
    console.log(`  from the host's start call to the first search's answer (start, login, a list request, the search): ${(startMs + loginMs + listBefore + httpFirst).toFixed(0)} ms`);
    const count = Number(args['http-queries']);
    const times = [];
    let found = 0;
    let cpuMs = 0;
    for (let n = 0; n < count; n++) {
      const content = texts[n % texts.length];
      const cpu = process.cpuUsage();
      t0 = performance.now();
      const ids = await searchHttp(content);
      times.push(performance.now() - t0);
      const used = process.cpuUsage(cpu);
      cpuMs += (used.user + used.system) / 1000;
      if (n < texts.length) {
        const want = new Set(truth(embedder.embedOne(content)));
        found += ids.filter((id) => want.has(id)).length;
      }
    }
    const cpuPerQuery = cpuMs / count;
    console.log(
      `exact top-${limit} over HTTP, embedding included   p50 ${percentile(times, 50).toFixed(2).padStart(8)} ms   p99 ${percentile(times, 99).toFixed(2).padStart(8)} ms   recall ${(found / (Math.min(count, texts.length) * limit)).toFixed(3)}   CPU ${cpuPerQuery.toFixed(2)} ms/query (client included)   (${count} queries)`,
    );
    // The same queries from a client in a process of its own (as a real client is): the numbers
    // above include this process's own fetch client, which shares the host's event loop and cores.
    const remote = await remoteSearches(host.url, token, texts, count);
    let remoteFound = 0;
    remote.ids.forEach((ids, n) => {
      const want = new Set(truth(embedder.embedOne(texts[n])));
      remoteFound += ids.filter((id) => want.has(id)).length;
    });
    console.log(
      `exact top-${limit} over HTTP, client in its own process   p50 ${percentile(remote.times, 50).toFixed(2).padStart(8)} ms   p99 ${percentile(remote.times, 99).toFixed(2).padStart(8)} ms   recall ${(remoteFound / (remote.ids.length * limit)).toFixed(3)}   host CPU ${remote.hostCpuMs.toFixed(2)} ms/query   (${count} queries)`,
    );
    console.log(`raw sqlite-vec vec0, in process, after restart   p50 ${percentile(rawTimes, 50).toFixed(2).padStart(8)} ms                                    CPU ${rawCpuPerQuery.toFixed(2)} ms/query   (${rawTimes.length} queries)`);
    console.log(`  HTTP p50 (client in its own process) / raw sqlite-vec p50: ${(percentile(remote.times, 50) / percentile(rawTimes, 50)).toFixed(2)}x`);
    console.log(`  HTTP p50 / raw sqlite-vec p50: ${(percentile(times, 50) / percentile(rawTimes, 50)).toFixed(2)}x   CPU per query: ${(cpuPerQuery / rawCpuPerQuery).toFixed(2)}x   first query: ${(httpFirst / rawFirst).toFixed(2)}x`);
    console.log(`  load: ${loadAverage()}`);
  } finally {
    await host.stop();
  }
}

/**
 * The AI-model embedder's fixed cost per call: `AiGatewayService.embed` (what the vector
 * database's and knowledge bases' AI-model embedders call) of one short text against a local
 * OpenAI-compatible /embeddings server, beside a plain HTTP POST of the same request to the same
 * server (the floor: the provider's round trip itself). Wall time and this process's CPU time per
 * call (the server runs in this process too, in both rows alike).
 */
async function benchEmbedCalls(count) {
  const dimension = 8;
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const input = JSON.parse(body).input;
      const texts = Array.isArray(input) ? input : [input];
      const data = texts.map((text, index) => ({ object: 'embedding', index, embedding: Array.from({ length: dimension }, (_, d) => ((text.length + d) % 7) / 7 - 0.4) }));
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ object: 'list', data, model: 'bench-embed', usage: { prompt_tokens: texts.length, total_tokens: texts.length } }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
  const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-embed-'));
  const host = createHost({
    config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00', rateLimit: { perIp: 1_000_000, perAccount: 1_000_000 } }, database: { url: `sqlite:${join(dir, 'embed.db')}` }, server: { host: '127.0.0.1', port: 0 }, network: { allowPrivateNetworks: ['127.0.0.1'] } },
    logger: pino({ level: 'error' }),
  });
  await host.start();
  try {
    const call = async (method, path, token, body) => {
      const response = await fetch(`${host.url}${path}`, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const { token } = await call('POST', '/auth/register', null, { email: 'embed@example.com', password: 'bench-password-123' });
    const model = await call('POST', '/ai/models', token, { name: 'Embeddings', service: 'openai', conf: { model: 'bench-chat', embeddingModel: 'bench-embed', baseURL, apiKey: 'sk-bench-embed', compatibility: 'compatible' } });
    const gateway = host.kernel.get(aiGatewayServiceIdentifier);
    const viaGateway = () => gateway.embed({ modelId: model.id, texts: ['how do I reset a password'] });
    const raw = async () => {
      const response = await fetch(`${baseURL}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-embed' }, body: JSON.stringify({ model: 'bench-embed', input: ['how do I reset a password'] }) });
      return response.json();
    };
    for (let i = 0; i < 20; i++) {
      await viaGateway();
      await raw();
    }
    // Interleaved: each round runs both, so the machine's load falls on them alike.
    const stats = { gateway: { wall: 0, cpu: 0 }, raw: { wall: 0, cpu: 0 } };
    for (let i = 0; i < count; i++) {
      for (const [name, run] of i % 2 ? [['gateway', viaGateway], ['raw', raw]] : [['raw', raw], ['gateway', viaGateway]]) {
        const cpu = process.cpuUsage();
        const t0 = performance.now();
        await run();
        stats[name].wall += performance.now() - t0;
        const used = process.cpuUsage(cpu);
        stats[name].cpu += (used.user + used.system) / 1000;
      }
    }
    const per = (x) => (x / count).toFixed(2).padStart(7);
    console.log(`\nAI-model embedder, fixed cost per call (1 text, local OpenAI-compatible server, ${count} calls each, interleaved; ${loadAverageText()})`);
    console.log(`AiGatewayService.embed (model read, conf, provider call, model-call record)  wall ${per(stats.gateway.wall)} ms   CPU ${per(stats.gateway.cpu)} ms`);
    console.log(`plain HTTP POST of the same request to the same server (floor)                wall ${per(stats.raw.wall)} ms   CPU ${per(stats.raw.cpu)} ms`);
    console.log(`  gateway / plain POST: wall ${(stats.gateway.wall / stats.raw.wall).toFixed(2)}x   CPU ${(stats.gateway.cpu / stats.raw.cpu).toFixed(2)}x   fixed cost above the floor: ${per(stats.gateway.cpu - stats.raw.cpu)} ms CPU`);
  } finally {
    await host.stop();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
const loadAverageText = () => `load average ${loadavg().map((x) => x.toFixed(2)).join(', ')} on ${availableParallelism()} CPUs`;

if (Number(args.writes) > 0) await benchWrites(Number(args.writes));
if (args.only === 'writes') process.exit(0);
if (Number(args['embed-calls']) > 0) await benchEmbedCalls(Number(args['embed-calls']));
if (args.only === 'embed') process.exit(0);

const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-vector-'));
const store = new SqliteVecVectorStore();
const kernel = createKernel({
  config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' } },
  database: sqliteDatabase({ path: join(dir, 'bench.db') }),
  modules: coreModules,
  adapters: [provide(vectorStoreServiceIdentifier, store)],
  logger: pino({ level: 'warn' }),
});
await kernel.start({ jobs: false });

let kernelStopped = false;
try {
  const em = kernel.fork();
  const user = await kernel.get(UserService).create(em, { email: 'bench@example.com', password: 'bench-password-123' });
  const [{ team_id: teamId }] = await em.getConnection().execute('SELECT team_id FROM team_members WHERE user_id = ?', [user.id], 'all');
  const collectionId = '00000000-0000-7000-8000-000000000001';
  // The default (hashing) embedder's name: the host started after the restart searches this collection over HTTP.
  const hashing = new HashingEmbedder({ dimension: dim });
  em.create(VdbCollection, { id: collectionId, team: teamId, name: 'Bench', embedder: hashing.name, dimension: dim });
  await em.flush();

  console.log(`vector bench: ${rows.toLocaleString()} × ${dim} dims, limit ${limit}, ${queries} queries, Node ${process.version}`);
  const matrix = new Float32Array(rows * dim);
  const ids = new Array(rows);
  const rare = [];
  const started = performance.now();
  const batch = 500;
  const now = new Date().toISOString();
  for (let start = 0; start < rows; start += batch) {
    const values = [];
    const params = [];
    for (let i = start; i < Math.min(rows, start + batch); i++) {
      const v = unit();
      matrix.set(v, i * dim);
      const id = `00000000-0000-7000-9000-${String(i).padStart(12, '0')}`;
      ids[i] = id;
      const isRare = i % 100 === 37;
      if (isRare) rare.push(i);
      values.push('(?, ?, ?, ?, ?, ?, ?, ?, ?)');
      params.push(id, collectionId, `record ${i}`, JSON.stringify(isRare ? ['rare'] : ['common']), JSON.stringify({ i }), vectorToBytes(v), dim, now, now);
    }
    await em.getConnection().execute(`INSERT INTO tool_vdb_records (id, collection_id, content, tags, metadata, embedding, dimension, created_at, updated_at) VALUES ${values.join(', ')}`, params);
  }
  console.log(`loaded in ${((performance.now() - started) / 1000).toFixed(1)} s (${rare.length} records match the filter)`);
  // Rows were inserted behind the store's back: bring its vec0 mirror up to date, as a restart would.
  const synced = performance.now();
  await store.sync(kernel.fork());
  console.log(`sqlite-vec mirror and term index synced in ${((performance.now() - synced) / 1000).toFixed(1)} s`);

  const bruteForce = (q, candidates) => {
    const top = [];
    const consider = (i) => {
      let dot = 0;
      const base = i * dim;
      for (let d = 0; d < dim; d++) dot += q[d] * matrix[base + d];
      const distance = 1 - dot;
      if (top.length === limit && distance >= top[limit - 1].distance) return;
      top.push({ i, distance });
      top.sort((a, b) => a.distance - b.distance);
      if (top.length > limit) top.pop();
    };
    if (candidates) for (const i of candidates) consider(i);
    else for (let i = 0; i < rows; i++) consider(i);
    return top.map((hit) => ids[hit.i]);
  };

  const percentile = (times, p) => {
    const sorted = [...times].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  };
  const queryVectors = Array.from({ length: queries }, unit);
  const filter = { op: 'contains', field: { root: 'tags', path: [] }, value: 'rare' };

  const measure = async (label, count, run, truth) => {
    const times = [];
    let found = 0;
    let expected = 0;
    let short = 0;
    await run(queryVectors[0]); // warm-up
    for (let n = 0; n < count; n++) {
      const q = queryVectors[n % queryVectors.length];
      const t0 = performance.now();
      const hits = await run(q);
      times.push(performance.now() - t0);
      if (hits.length < limit) short++;
      if (truth) {
        const want = new Set(truth(q));
        expected += want.size;
        found += hits.filter((id) => want.has(id)).length;
      }
    }
    const p50 = percentile(times, 50);
    const p99 = percentile(times, 99);
    console.log(
      `${label.padEnd(46)} p50 ${p50.toFixed(2).padStart(8)} ms   p99 ${p99.toFixed(2).padStart(8)} ms` +
        (truth ? `   recall ${(found / expected).toFixed(3)}` : '') +
        (short ? `   ${short} queries answered fewer than ${limit}` : ''),
    );
    return p50;
  };

  const interleaved = async (count, variants) => {
    for (const variant of variants) await variant.run(queryVectors[0]); // warm-up
    const stats = variants.map(() => ({ times: [], found: 0, expected: 0, short: 0 }));
    for (let n = 0; n < count; n++) {
      const q = queryVectors[n % queryVectors.length];
      for (let j = 0; j < variants.length; j++) {
        const index = (n + j) % variants.length;
        const { run, truth } = variants[index];
        const stat = stats[index];
        const t0 = performance.now();
        const hits = await run(q);
        stat.times.push(performance.now() - t0);
        if (hits.length < limit) stat.short++;
        if (truth) {
          const want = new Set(truth(q));
          stat.expected += want.size;
          stat.found += hits.filter((id) => want.has(id)).length;
        }
      }
    }
    return variants.map(({ label, truth }, index) => {
      const { times, found, expected, short } = stats[index];
      const p50 = percentile(times, 50);
      console.log(
        `${label.padEnd(46)} p50 ${p50.toFixed(2).padStart(8)} ms   p99 ${percentile(times, 99).toFixed(2).padStart(8)} ms` +
          (truth ? `   recall ${(found / expected).toFixed(3)}` : '') +
          (short ? `   ${short} queries answered fewer than ${limit}` : ''),
      );
      return p50;
    });
  };
  const loadAverage = () => `load average ${loadavg().map((x) => x.toFixed(2)).join(', ')} on ${availableParallelism()} CPUs`;
  console.log(`machine: ${loadAverage()}`);

  const search = (s, withFilter) => async (q) => (await s.search(kernel.fork(), { collectionId, vector: q, limit, filter: withFilter ? filter : null })).map((hit) => hit.id);
  const truthAll = (q) => bruteForce(q);
  const truthRare = (q) => bruteForce(q, rare);

  console.log('\nunfiltered');
  // The store's in-memory index is built in the background from its first search of the collection
  // (which answers from the vec0 mirror meanwhile).
  const built = performance.now();
  await store.search(kernel.fork(), { collectionId, vector: queryVectors[0], limit, filter: null });
  const firstAnswered = performance.now() - built;
  await store.idle();
  const [saved] = await kernel.fork().getConnection().execute('SELECT count, pages FROM tool_vdb_index_snapshots WHERE collection_id = ?', [collectionId], 'all');
  console.log(
    `first search answered in ${firstAnswered.toFixed(0)} ms (vec0 mirror); in-memory int8 index built in the background and saved` +
      ` (${saved ? `${Number(saved.count).toLocaleString()} vectors in ${saved.pages} pages` : 'not saved'}) in ${((performance.now() - built) / 1000).toFixed(1)} s`,
  );
  const vec0Store = new SqliteVecVectorStore({ memoryIndex: false });
  const jsStore = new SqliteVecVectorStore({ simd: false });
  await jsStore.search(kernel.fork(), { collectionId, vector: queryVectors[0], limit, filter: null });
  await jsStore.idle();
  // Interleaved rounds: each query runs on every variant in turn (rotating which goes first), so
  // load from other jobs on the machine falls on all of them alike.
  const [ceilingAll, beforeAll, vecAll, jsAll] = await interleaved(queries, [
    { label: 'brute force Float32Array (ceiling)', run: async (q) => bruteForce(q) },
    { label: 'before: vec0 mirror, unit vectors, L2', run: search(vec0Store, false), truth: truthAll },
    { label: 'after: int8 index (wasm SIMD) + exact rerank', run: search(store, false), truth: truthAll },
    { label: 'after, first pass in plain JavaScript', run: search(jsStore, false), truth: truthAll },
  ]);
  // Earlier layouts, for reference (not interleaved).
  await em.getConnection().execute(`CREATE VIRTUAL TABLE bench_vec_cosine USING vec0(record_id text primary key, collection_id text partition key, embedding float[${dim}] distance_metric=cosine)`);
  await em.getConnection().execute('INSERT INTO bench_vec_cosine (record_id, collection_id, embedding) SELECT id, collection_id, embedding FROM tool_vdb_records');
  const cosineMirror = async (q) =>
    (await kernel.fork().getConnection().execute('SELECT record_id AS id FROM bench_vec_cosine WHERE embedding MATCH ? AND k = ? AND collection_id = ? ORDER BY distance', [vectorToBytes(q), limit, collectionId], 'all')).map((row) => row.id);
  await measure('vec0 mirror of raw vectors, cosine (older)', Math.min(queries, 20), cosineMirror, truthAll);
  // The same store's statement over the records table (what filtered searches run), unfiltered, for comparison.
  const scalar = async (q) => (await store.query(kernel.fork(), { collectionId, vector: q, limit, filter: null })).map((hit) => hit.id);
  await measure('sqlite-vec, scalar over the records table', Math.min(queries, 20), scalar, truthAll);
  const exact = new ExactScanVectorStore();
  const exactAll = await measure('exact-scan store (PostgreSQL default)', Number(args['exact-queries']), search(exact, false), truthAll);
  console.log(
    `  before / ceiling: ${(beforeAll / ceilingAll).toFixed(2)}x   after / ceiling: ${(vecAll / ceilingAll).toFixed(2)}x   ` +
      `after vs before: ${(beforeAll / vecAll).toFixed(2)}x faster   JS first pass / ceiling: ${(jsAll / ceilingAll).toFixed(2)}x   exact-scan / ceiling: ${(exactAll / ceilingAll).toFixed(2)}x`,
  );
  console.log(`  load: ${loadAverage()}`);

  console.log('\nfiltered: tags contains "rare" (1 % of records)');
  const ceilingRare = await measure('brute force over the matching rows (ceiling)', queries, async (q) => bruteForce(q, rare));
  // Before: the same store without its term index scans every row of the collection.
  const scanning = new SqliteVecVectorStore({ termIndex: false });
  const beforeRare = await measure('before: sqlite-vec, scan of every row', queries, search(scanning, true), truthRare);
  const vecRare = await measure('after: sqlite-vec, term index candidates first', queries, search(store, true), truthRare);
  const exactRare = await measure('exact-scan store (PostgreSQL default)', Number(args['exact-queries']), search(exact, true), truthRare);
  console.log(
    `  before / ceiling: ${(beforeRare / ceilingRare).toFixed(2)}x   after / ceiling: ${(vecRare / ceilingRare).toFixed(2)}x   ` +
      `after vs before: ${(beforeRare / vecRare).toFixed(1)}x faster   exact-scan / ceiling: ${(exactRare / ceilingRare).toFixed(2)}x`,
  );
  console.log(`  load: ${loadAverage()}`);
  await kernel.stop();
  kernelStopped = true;
  await afterRestart({ path: join(dir, 'bench.db'), truth: truthAll, percentile, loadAverage });
} finally {
  if (!kernelStopped) await kernel.stop();
  rmSync(dir, { recursive: true, force: true });
}

// Speech: real-time factor of the eSpeak NG synthesizer (MP3 included), when the program exists.
try {
  const { EspeakSpeechSynthesizer } = await import('@trellis/speech-espeak');
  if (!EspeakSpeechSynthesizer.isAvailable('espeak-ng')) {
    console.log('\nspeech: espeak-ng is not installed (apt-get install espeak-ng); skipped');
  } else {
    const synthesizer = new EspeakSpeechSynthesizer();
    const text = '欢迎使用语音合成服务。今天的天气很好，适合出去散步。请记得带上雨伞，下午可能会下雨。';
    const runs = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const audio = await synthesizer.synthesize(text, { language: 'zh' });
      runs.push({ ms: performance.now() - t0, seconds: audio.durationSeconds });
    }
    const best = runs.sort((a, b) => a.ms - b.ms)[Math.floor(runs.length / 2)];
    console.log(`\nspeech: ${text.length} characters → ${best.seconds.toFixed(2)} s of MP3 in ${best.ms.toFixed(0)} ms (median of 5): real-time factor ${(best.ms / 1000 / best.seconds).toFixed(3)}`);
  }
} catch (error) {
  console.log(`\nspeech: skipped (${error.message})`);
}
