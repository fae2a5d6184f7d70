#!/usr/bin/env node
// Knowledge base benchmark: builds a knowledge base from a generated corpus of PDF pages (one
// passage per page, each about an invented entity, with a known question), then measures
// retrieval quality — recall@5 and MRR for keyword (FTS5 BM25), vector (the default hashing
// embedder through the vector store) and hybrid (both fused by reciprocal rank) — plus ingestion
// speed (pages and chunks per second: parse, chunk, embed, write) and query latency p50/p99.
// Half the questions name their entity exactly, half with a typo (as users type): keyword search
// needs the exact word, the n-gram embedder tolerates the typo but confuses similar passages.
//
//   pnpm bench:knowledge          (builds the packages first)
//   node bench/knowledge.mjs [--passages 2000] [--per-pdf 100] [--queries 400]
//
// Not a test: it prints figures and never fails on them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { coreModules, createKernel, IngestionService, KnowledgeService, provide, RetrievalService, UserService, vectorStoreServiceIdentifier } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';

const { values: args } = parseArgs({ options: { passages: { type: 'string', default: '2000' }, 'per-pdf': { type: 'string', default: '100' }, queries: { type: 'string', default: '400' } } });
const passages = Number(args.passages);
const perPdf = Number(args['per-pdf']);
const queryCount = Math.min(Number(args.queries), passages);

let seed = 7;
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const pick = (list) => list[Math.floor(random() * list.length)];

// Invented entity names from syllables: unique, rare words neither method has seen elsewhere.
const syllables = ['ka', 'lo', 'mir', 'tes', 'van', 'dor', 'ul', 'shi', 'pra', 'nek', 'zo', 'ber', 'qua', 'fen', 'rim', 'sol', 'tav', 'gri', 'mek', 'hal'];
const names = new Set();
while (names.size < passages) names.add(Array.from({ length: 3 }, () => pick(syllables)).join(''));
const entities = [...names].map((name) => name[0].toUpperCase() + name.slice(1));
const kinds = ['river', 'harbour', 'festival', 'mountain pass', 'library', 'observatory', 'vineyard', 'lighthouse'];
const regions = ['the northern coast', 'the eastern valleys', 'the high plateau', 'the southern islands', 'the central plains'];
const attributes = [
  ['opening year', () => String(1600 + Math.floor(random() * 400))],
  ['length in kilometres', () => String(5 + Math.floor(random() * 900))],
  ['founding guild', () => pick(['weavers', 'masons', 'glassmakers', 'tanners', 'brewers'])],
  ['patron animal', () => pick(['heron', 'lynx', 'otter', 'falcon', 'badger'])],
];
const filler = ['Visitors often arrive in spring when the weather is mild.', 'Local records describe several changes over the centuries.', 'The site is maintained by a small volunteer committee.', 'Guided tours are offered on most weekends.'];

const corpus = entities.map((entity, i) => {
  const [attribute, value] = pick(attributes);
  const answer = value();
  const text = `${entity} is a ${pick(kinds)} in ${pick(regions)}. Its ${attribute} is ${answer}. ${pick(filler)} ${pick(filler)}`;
  return { i, entity, attribute, text };
});

/** A typo a user might make: two neighbouring letters swapped inside the word. */
const typo = (word) => {
  const at = 1 + Math.floor(random() * (word.length - 3));
  return word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2);
};
const questions = Array.from({ length: queryCount }, (_, q) => {
  const target = corpus[Math.floor((q * passages) / queryCount)];
  const name = q % 2 === 0 ? target.entity : typo(target.entity);
  return { target: target.i, exact: q % 2 === 0, query: `What is the ${target.attribute} of ${name}?` };
});

async function buildPdf(slice) {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const passage of slice) pdf.addPage().drawText(passage.text, { x: 40, y: 760, size: 10, font, maxWidth: 520, lineHeight: 13 });
  return pdf.save();
}

const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-knowledge-'));
const kernel = createKernel({
  config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-00' }, knowledge: { chunking: { chunkTokens: 120, overlapTokens: 0, parentTokens: 0 }, retrieval: { candidates: 50 } } },
  database: sqliteDatabase({ path: join(dir, 'bench.db') }),
  modules: coreModules,
  // The host's default vector store on SQLite.
  adapters: [provide(vectorStoreServiceIdentifier, new SqliteVecVectorStore())],
  logger: pino({ level: 'error' }),
});
await kernel.start({ jobs: false });

const percentile = (times, p) => {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

try {
  const em = kernel.fork();
  const user = await kernel.get(UserService).create(em, { email: 'bench@example.com', password: null });
  const knowledge = kernel.get(KnowledgeService);
  const teamId = await knowledge.teamOf(em, user.id);
  const base = await knowledge.createBase(em, user.id, teamId, { name: 'Bench corpus' });
  console.log(`knowledge bench: ${passages.toLocaleString()} passages on ${passages.toLocaleString()} PDF pages (${Math.ceil(passages / perPdf)} files), ${queryCount} questions (half with a typo), embedder ${base.embedder}, vector store sqlite-vec, Node ${process.version}`);

  const files = [];
  for (let start = 0; start < passages; start += perPdf) files.push({ name: `corpus-${String(start / perPdf).padStart(3, '0')}.pdf`, first: start, data: await buildPdf(corpus.slice(start, start + perPdf)) });
  for (const file of files) await knowledge.addSource(kernel.fork(), base, { kind: 'file', name: file.name, mediaType: 'application/pdf', data: file.data });
  const started = performance.now();
  const ingested = await kernel.get(IngestionService).drain(kernel.fork(), pino({ level: 'warn' }), new AbortController().signal);
  const seconds = (performance.now() - started) / 1000;
  const stats = await knowledge.statsOf(kernel.fork(), base.id);
  console.log(`ingestion: ${ingested} files, ${stats.ready} ready, ${stats.failed} failed, ${stats.chunks.toLocaleString()} chunks in ${seconds.toFixed(1)} s = ${(passages / seconds).toFixed(0)} pages/s, ${(stats.chunks / seconds).toFixed(0)} chunks/s`);

  const firstOf = new Map(files.map((file) => [file.name, file.first]));
  const retrieval = kernel.get(RetrievalService);
  const results = {};
  for (const mode of ['keyword', 'vector', 'hybrid']) {
    let hits = 0;
    let reciprocal = 0;
    const byKind = { exact: 0, typo: 0 };
    const times = [];
    for (const question of questions) {
      const t0 = performance.now();
      const found = await retrieval.retrieve(kernel.fork(), base, { query: question.query, limit: 5, mode, userId: user.id });
      times.push(performance.now() - t0);
      const rank = found.findIndex((passage) => firstOf.get(passage.citation.sourceName) + passage.citation.page - 1 === question.target);
      if (rank >= 0) {
        hits++;
        reciprocal += 1 / (rank + 1);
        byKind[question.exact ? 'exact' : 'typo']++;
      }
    }
    const half = questions.length / 2;
    results[mode] = { recall: hits / questions.length, mrr: reciprocal / questions.length, exact: byKind.exact / half, typo: byKind.typo / half, p50: percentile(times, 50), p99: percentile(times, 99) };
  }
  console.log('\nmode      recall@5   MRR     recall@5 exact / typo   query p50    p99');
  for (const [mode, r] of Object.entries(results)) {
    console.log(`${mode.padEnd(9)} ${r.recall.toFixed(3).padStart(8)} ${r.mrr.toFixed(3).padStart(7)}   ${r.exact.toFixed(3).padStart(10)} / ${r.typo.toFixed(3)}   ${r.p50.toFixed(2).padStart(7)} ms ${r.p99.toFixed(2).padStart(7)} ms`);
  }
  const best = Math.max(results.keyword.recall, results.vector.recall);
  console.log(`\nhybrid recall@5 vs the better single method: ${results.hybrid.recall.toFixed(3)} vs ${best.toFixed(3)} (${results.hybrid.recall > best ? 'hybrid beats both' : 'hybrid does NOT beat both'})`);
} finally {
  await kernel.stop();
  rmSync(dir, { recursive: true, force: true });
}
