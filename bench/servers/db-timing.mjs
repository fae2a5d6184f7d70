// Where a host's time on its one SQLite connection goes (bench/mixed-load.mjs --db-timing): an
// opt-in hook that wraps knex's pool (acquire, release) and the sqlite3 driver's statements, and
// the vector store's search steps, in the process of the host under test. Not product code: it
// patches internals of MikroORM 6 / knex 3 / sqlite3 5 and of SqliteVecVectorStore, and costs a
// few microseconds per statement.
//
// Per hold of the connection (acquire → release), labelled by its statements (a transaction by
// its first ones): how long it waited for the connection, how long it held it, and how much of
// that its statements ran (call → callback, libuv's queue included); the rest of a hold is this
// thread's work between statements while the connection stays taken. Per statement: count and
// time. Per vector search: the steps of its wall time. `report()` prints and resets.
import { performance } from 'node:perf_hooks';
import { VdbService, vectorStoreServiceIdentifier } from '@trellis/core';
import { QuantizedIndex } from '@trellis/vector-sqlite';

/** A statement's kind: its verb and first table, placeholders lists folded. */
export function statementLabel(sql) {
  const text = sql.replace(/\s+/g, ' ').trim();
  const verb = /^(\w+)(?: (into|from|or \w+ into))?/i.exec(text);
  const lower = verb ? verb[1].toLowerCase() : '?';
  if (['begin', 'commit', 'rollback', 'savepoint', 'release', 'pragma'].includes(lower)) return lower;
  const table = (lower === 'select' || lower === 'with' ? / from [`"]?(\w+)/i.exec(text) : /^(?:insert(?: or \w+)? into|update|delete from|replace into) [`"]?(\w+)/i.exec(text))?.[1] ?? '';
  let note = '';
  if (/ MATCH \?/.test(text)) note = ' (vec0 MATCH)';
  else if (/vec_distance_cosine/.test(text)) note = ' (vec_distance_cosine scan)';
  else if (/count\(\*\)/i.test(text)) note = ' (count)';
  else if (/max\(seq\)/i.test(text) && lower === 'select' && table !== 'tool_vdb_changes') note = ' (+log position)';
  return `${lower} ${table}${note}`;
}

class Stat {
  constructor() {
    this.n = 0;
    this.sum = 0;
    this.max = 0;
    this.samples = [];
  }
  add(ms) {
    this.n++;
    this.sum += ms;
    if (ms > this.max) this.max = ms;
    if (this.samples.length < 20000) this.samples.push(ms);
    else this.samples[Math.floor(Math.random() * this.n) % 20000] = ms;
  }
  quantile(q) {
    if (this.samples.length === 0) return 0;
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }
}
const table = () => new Map();
const statOf = (map, key) => {
  let found = map.get(key);
  if (!found) map.set(key, (found = new Stat()));
  return found;
};

export async function instrumentDatabase(host) {
  const em = host.kernel.fork();
  const client = em.getConnection().getKnex().client;
  let holds = table(); // label → { wait, held, exec, idle }
  let statements = table();
  let search = table();
  let since = performance.now();
  let current = null;

  // ---- the driver: every statement (knex's and the prepared ones) runs through a Statement ----
  const connection = await client.acquireConnection();
  const probe = await new Promise((resolve, reject) => {
    const s = connection.prepare('SELECT 1', (error) => (error ? reject(error) : resolve(s)));
  });
  await client.releaseConnection(connection);
  const statementProto = Object.getPrototypeOf(probe);
  for (const method of ['all', 'run', 'get']) {
    const original = statementProto[method];
    statementProto[method] = function (...args) {
      const at = args.findLastIndex((a) => typeof a === 'function');
      if (at < 0) return original.apply(this, args);
      const callback = args[at];
      const label = statementLabel(this.sql ?? '?');
      const hold = current;
      const start = performance.now();
      args[at] = function (...results) {
        const ms = performance.now() - start;
        statOf(statements, label).add(ms);
        if (hold) {
          hold.exec += ms;
          if (hold.labels.length < 4) hold.labels.push(label);
        }
        return callback.apply(this, results);
      };
      return original.apply(this, args);
    };
  }

  // ---- the pool: one connection, so at most one hold at a time ----
  const acquire = client.acquireConnection;
  const release = client.releaseConnection;
  client.acquireConnection = async function (...args) {
    const start = performance.now();
    const got = await acquire.apply(this, args);
    current = { start: performance.now(), wait: performance.now() - start, exec: 0, labels: [] };
    return got;
  };
  client.releaseConnection = function (...args) {
    const hold = current;
    current = null;
    if (hold) {
      const held = performance.now() - hold.start;
      const label = hold.labels[0] === 'begin' ? `tx: ${hold.labels.slice(1, 3).join(', ')}` : hold.labels[0] ?? '(no statement)';
      const entry = holds.get(label) ?? { wait: new Stat(), held: new Stat(), exec: new Stat(), idle: new Stat() };
      holds.set(label, entry);
      entry.wait.add(hold.wait);
      entry.held.add(held);
      entry.exec.add(hold.exec);
      entry.idle.add(Math.max(0, held - hold.exec));
    }
    return release.apply(this, args);
  };

  // ---- a vector search's steps ----
  const service = host.kernel.get(VdbService);
  const store = host.kernel.get(vectorStoreServiceIdentifier);
  const timed = (target, method, key, stats = () => search) => {
    const original = target[method];
    if (typeof original !== 'function') return;
    target[method] = async function (...args) {
      const start = performance.now();
      try {
        return await original.apply(this, args);
      } finally {
        statOf(stats(), key).add(performance.now() - start);
      }
    };
  };
  timed(service, 'search', 'a. VdbService.search (whole)');
  timed(service.embedder ?? {}, 'embed', 'b. embedder.embed');
  timed(store, 'search', 'c. store.search');
  timed(store, 'searchMemory', 'd. store.searchMemory (in-memory index + re-rank)');
  const searchMemory = store.searchMemory;
  if (typeof searchMemory === 'function') {
    store.searchMemory = async function (...args) {
      const hits = await searchMemory.apply(this, args);
      statOf(search, hits ? 'd1. searchMemory answered' : 'd2. searchMemory gave up (fallback to the vec0 mirror)').add(0);
      return hits;
    };
  }
  timed(store, 'query', 'g. store.query (filtered scan)');
  timed(store, 'catchUp', 'f2. catchUp (in the gate)');
  const exclusive = store.exclusive;
  if (typeof exclusive === 'function') {
    store.exclusive = function (run) {
      const queued = performance.now();
      return exclusive.call(this, async () => {
        statOf(search, 'e. gate: wait for earlier catch-ups').add(performance.now() - queued);
        const start = performance.now();
        try {
          return await run();
        } finally {
          statOf(search, 'f. gate: run (catch-up, index look-up)').add(performance.now() - start);
        }
      });
    };
  }
  const candidates = QuantizedIndex.prototype.candidates;
  QuantizedIndex.prototype.candidates = function (...args) {
    const start = performance.now();
    try {
      return candidates.apply(this, args);
    } finally {
      statOf(search, 'h. QuantizedIndex.candidates (CPU)').add(performance.now() - start);
    }
  };

  const ms = (x) => `${x.toFixed(x < 10 ? 2 : 0)}`.padStart(8);
  return {
    /** Prints the figures since the last report (stderr), then resets them. */
    report(title) {
      const seconds = (performance.now() - since) / 1000;
      const lines = [`\n  [db-timing] ${title} (${seconds.toFixed(1)} s)`];
      let heldTotal = 0;
      for (const [, e] of holds) heldTotal += e.held.sum;
      lines.push(`    connection held ${((heldTotal / 1000 / seconds) * 100).toFixed(0)}% of the time; holds by kind (ms; idle = held while no statement ran):`);
      lines.push(`    ${'count'.padStart(7)} ${'held %'.padStart(7)} ${'wait p50'.padStart(8)} ${'wait p99'.padStart(8)} ${'held p50'.padStart(8)} ${'held p99'.padStart(8)} ${'held max'.padStart(8)} ${'exec sum'.padStart(8)} ${'idle sum'.padStart(8)}  kind`);
      for (const [label, e] of [...holds].sort((a, b) => b[1].held.sum - a[1].held.sum).slice(0, 18)) {
        lines.push(
          `    ${String(e.held.n).padStart(7)} ${((e.held.sum / heldTotal) * 100).toFixed(1).padStart(7)} ${ms(e.wait.quantile(0.5))} ${ms(e.wait.quantile(0.99))} ${ms(e.held.quantile(0.5))} ${ms(e.held.quantile(0.99))} ${ms(e.held.max)} ${ms(e.exec.sum)} ${ms(e.idle.sum)}  ${label}`,
        );
      }
      lines.push(`    statements by kind (ms, call → callback):`);
      for (const [label, s] of [...statements].sort((a, b) => b[1].sum - a[1].sum).slice(0, 14)) {
        lines.push(`    ${String(s.n).padStart(7)} sum ${ms(s.sum)} p50 ${ms(s.quantile(0.5))} p99 ${ms(s.quantile(0.99))} max ${ms(s.max)}  ${label}`);
      }
      lines.push(`    vector search steps (ms); store: ${store.indexes?.size ?? '?'} in-memory indexes, ${store.building?.size ?? '?'} building, ${store.saving?.size ?? '?'} saving, log position applied ${store.applied}:`);
      for (const [label, s] of [...search].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        lines.push(`    ${String(s.n).padStart(7)} sum ${ms(s.sum)} p50 ${ms(s.quantile(0.5))} p99 ${ms(s.quantile(0.99))} max ${ms(s.max)}  ${label}`);
      }
      process.stderr.write(`${lines.join('\n')}\n`);
      holds = table();
      statements = table();
      search = table();
      since = performance.now();
    },
  };
}
