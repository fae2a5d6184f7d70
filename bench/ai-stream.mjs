#!/usr/bin/env node
// AI stream relay benchmark: what Trellis adds to a streamed conversation turn. A local server
// speaking OpenAI's Chat Completions SSE format streams numbered deltas; they are read
//   direct:  by the `@trellis/ai-openai` adapter itself (the SDK parsing the provider stream), and
//   relay:   through a Trellis conversation (gateway, turn, push service, user WebSocket) by a `ws`
//            client of `/v3/wss`,
// in the same run, on each transport. Two phases per target:
//   throughput: --deltas deltas written as fast as the socket takes them; deltas per second from
//               the first delta sent to the last one received;
//   latency:    --paced deltas, one every --interval ms; per delta, the time from the provider
//               server writing it to the reader receiving it (p50, p99), and the relay's added
//               latency (relay minus direct at the same percentile).
//
//   pnpm build && node bench/ai-stream.mjs [--deltas 5000] [--paced 500] [--interval 2] [--rounds 3] [--transports uws,node]
//
// Everything runs in this process (provider server, Trellis host, clients), so the figures are
// relative: the ratio relay/direct is the point. Not a test: it prints figures and never fails.
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    deltas: { type: 'string', default: '5000' },
    paced: { type: 'string', default: '500' },
    interval: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    transports: { type: 'string', default: 'uws,node' },
  },
});
const burst = Number(args.deltas);
const paced = Number(args.paced);
const interval = Number(args.interval);
const rounds = Math.max(1, Number(args.rounds));

for (const pkg of ['core', 'host', 'adapters/db-sqlite', 'adapters/ai-openai', 'adapters/ai-sdk']) {
  if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
    console.error(`packages/${pkg} is not built: run \`pnpm build\` first.`);
    process.exit(1);
  }
}
const { aiProvidersServiceIdentifier, provide } = await import('@trellis/core');
const { createHost } = await import('@trellis/host');
const { sqliteDatabase } = await import('@trellis/db-sqlite');
const { OpenAiProvider } = await import('@trellis/ai-openai');
const { pino } = await import('pino').catch(() => ({ pino: null }));

// ---- the provider server: numbered deltas "<i>|" in OpenAI chunks, send times recorded ----
let plan = { count: 0, intervalMs: 0 };
let sentAt = [];
const chunk = (delta, extra = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
const provider = createServer((req, res) => {
  req.resume();
  req.on('end', async () => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk({ role: 'assistant', content: '' }));
    const { count, intervalMs } = plan;
    sentAt = new Array(count);
    for (let i = 0; i < count; i++) {
      if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
      sentAt[i] = performance.now();
      if (!res.write(chunk({ content: `${i}|` }))) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [], usage: { prompt_tokens: 10, completion_tokens: count, total_tokens: count + 10 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((resolve) => provider.listen(0, '127.0.0.1', resolve));
const baseURL = `http://127.0.0.1:${provider.address().port}/v1`;
const conf = { model: 'bench', baseURL, compatibility: 'compatible' };

/** Records the receive time of every numbered delta found in a text piece. */
function receiver(count) {
  const receivedAt = new Array(count);
  let buffer = '';
  let got = 0;
  return {
    feed(text) {
      const now = performance.now();
      buffer += text;
      let bar;
      while ((bar = buffer.indexOf('|')) >= 0) {
        const index = Number(buffer.slice(0, bar));
        buffer = buffer.slice(bar + 1);
        if (receivedAt[index] === undefined) {
          receivedAt[index] = now;
          got++;
        }
      }
    },
    get done() {
      return got === count;
    },
    receivedAt,
  };
}

function summarise(receivedAt, count) {
  const latencies = receivedAt.map((t, i) => t - sentAt[i]).sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  const span = receivedAt[count - 1] - sentAt[0];
  if (process.env.BENCH_VERBOSE) {
    const worst = receivedAt.map((t, i) => [i, t - sentAt[i]]).sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(`  n=${count} p90=${pct(90).toFixed(3)} p95=${pct(95).toFixed(3)} worst ${worst.map(([i, l]) => `#${i}:${l.toFixed(2)}`).join(' ')}`);
  }
  return { rate: (count / span) * 1000, p50: pct(50), p99: pct(99) };
}

const adapter = new OpenAiProvider();

/** CPU time of this whole process (provider server, Trellis, clients) per delta, in microseconds. */
function cpuPerDelta(start, count) {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

async function direct(count, intervalMs) {
  plan = { count, intervalMs };
  const r = receiver(count);
  const cpu = process.cpuUsage();
  for await (const part of adapter.chat(adapter.parseConf(conf), { messages: [{ role: 'user', content: 'go' }] })) {
    if (part.type === 'text-delta') r.feed(part.delta);
  }
  if (!r.done) throw new Error('direct: deltas missing');
  return { ...summarise(r.receivedAt, count), cpuUs: cpuPerDelta(cpu, count) };
}

async function setupHost(transport) {
  const host = createHost({
    config: {
      server: { host: '127.0.0.1', port: 0, transport },
      auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-0123' },
      ai: { pricing: { default: { input: 0, output: 0 } } },
      realtime: { maxPushBytes: 1_048_576 },
    },
    database: sqliteDatabase({ path: ':memory:' }),
    adapters: [provide(aiProvidersServiceIdentifier, [adapter])],
    ...(pino ? { logger: pino({ level: 'silent' }) } : {}),
  });
  await host.start();
  const url = host.url;
  const call = async (method, path, body, token) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  const user = await call('POST', '/auth/register', { email: `bench-${Date.now()}@example.com`, password: 'correct horse battery' });
  const token = user.token;
  const model = await call('POST', '/ai/models', { name: 'bench', service: 'openai', conf }, token);
  const bot = await call('POST', '/bot', { name: 'bench', conf: { modelId: model.id } }, token);
  const conv = await call('POST', '/conversation', { name: 'bench', botId: bot.id }, token);
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v3/wss?token=${encodeURIComponent(token)}`);
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const authed = new Promise((resolve) => ws.once('message', resolve));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'auth', params: { token } }));
  await authed;
  let current = null;
  ws.on('message', (data) => {
    const message = JSON.parse(String(data));
    if (message.method !== 'conversation' || !current) return;
    const { type, content } = message.params;
    if (type === 'delta') current.r.feed(content);
    else if (type === 'end' || type === 'error') current.finish(type === 'end' ? null : new Error(JSON.stringify(content)));
  });
  return {
    async relay(count, intervalMs) {
      plan = { count, intervalMs };
      const r = receiver(count);
      const cpu = process.cpuUsage();
      const ended = new Promise((resolve, reject) => (current = { r, finish: (error) => (error ? reject(error) : resolve()) }));
      await call('POST', `/conversation/${conv.id}/messages`, { content: 'go', attrs: { stream: true } }, token);
      await ended;
      current = null;
      if (!r.done) throw new Error('relay: deltas missing');
      return { ...summarise(r.receivedAt, count), cpuUs: cpuPerDelta(cpu, count) };
    },
    async close() {
      ws.close();
      await host.stop();
    },
  };
}

const best = (list, key, higher) => list.reduce((a, b) => (higher ? (b[key] > a[key] ? b : a) : b[key] < a[key] ? b : a));
const f = (n, d = 0) => n.toFixed(d).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

console.log(`AI stream relay: ${burst} deltas as fast as possible, ${paced} deltas every ${interval} ms, best of ${rounds} rounds\n`);
const rows = [];
for (const transport of args.transports.split(',')) {
  const host = await setupHost(transport);
  const d = { burst: [], paced: [] };
  const r = { burst: [], paced: [] };
  await direct(200, 0);
  await host.relay(200, 0);
  for (let i = 0; i < rounds; i++) {
    d.burst.push(await direct(burst, 0));
    r.burst.push(await host.relay(burst, 0));
    d.paced.push(await direct(paced, interval));
    r.paced.push(await host.relay(paced, interval));
  }
  await host.close();
  const dRate = best(d.burst, 'rate', true).rate;
  const rRate = best(r.burst, 'rate', true).rate;
  const dLat = best(d.paced, 'p99', false);
  const rLat = best(r.paced, 'p99', false);
  const dCpu = best(d.burst, 'cpuUs', false).cpuUs;
  const rCpu = best(r.burst, 'cpuUs', false).cpuUs;
  rows.push({ transport, dRate, rRate, dLat, rLat, dCpu, rCpu });
}
provider.close();

console.log('| transport | direct deltas/s | relay deltas/s | relay/direct | CPU µs per delta direct / relay (added) | direct p50 / p99 ms | relay p50 / p99 ms | added p50 / p99 ms per delta |');
console.log('|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.transport} | ${f(row.dRate)} | ${f(row.rRate)} | ${(row.rRate / row.dRate).toFixed(2)} | ${f(row.dCpu)} / ${f(row.rCpu)} (+${f(row.rCpu - row.dCpu)}) | ${row.dLat.p50.toFixed(3)} / ${row.dLat.p99.toFixed(3)} | ${row.rLat.p50.toFixed(3)} / ${row.rLat.p99.toFixed(3)} | ${(row.rLat.p50 - row.dLat.p50).toFixed(3)} / ${(row.rLat.p99 - row.dLat.p99).toFixed(3)} |`,
  );
}
console.log('\nTarget (issue 11): added latency under 1 ms per delta at p99, relay rate at least 1/2 of direct.');
console.log(`Load average while running: ${(await import('node:os')).loadavg().map((n) => n.toFixed(1)).join(' ')} on ${(await import('node:os')).availableParallelism()} cores (latency percentiles include scheduling delays of a shared machine; CPU per delta does not).`);
