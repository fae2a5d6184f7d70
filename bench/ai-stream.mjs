#!/usr/bin/env node
// AI stream relay benchmark: what Trellis adds to a streamed conversation turn.
//
// A child process runs a local server speaking OpenAI's Chat Completions SSE format (numbered
// deltas "<i>|") and the `ws` client of `/v3/wss`; this process runs only the Trellis host, so the
// client's CPU does not compete with the host inside one process. Deltas are read
//   direct:  by the `@trellis/ai-openai` adapter itself in the host process (the SDK parsing the
//            provider stream), and
//   relayed: through a Trellis conversation (turn, push service, PubSub, push hub, user WebSocket)
//            to the `ws` client in the child,
// interleaved in the same run (direct, relayed, direct, relayed, ...), on each transport. Times
// come from one clock shared by both processes (CLOCK_MONOTONIC through process.hrtime).
//
//   throughput: --deltas deltas written as fast as the socket takes them; deltas per second from
//               the first delta written to the last one read, direct and relayed, and the ratio.
//   latency:    --paced deltas, one every --interval ms. For each delta of a relayed turn:
//                 added   = the client has it - the host's adapter has it (relayed minus direct,
//                           the same delta in the same turn: what the relay costs);
//                 in-host = the push hub hands it to the socket - the host's adapter has it.
//               Direct and relayed latency from the provider writing a delta are shown too.
//   Figures are medians over --rounds rounds (percentiles per round, then the median).
//
//   pnpm build && node bench/ai-stream.mjs [--deltas 5000] [--paced 2000] [--interval 1] [--rounds 5] [--transports uws,node]
//
// Not a test: it prints figures and never fails. On a shared machine the latency tail includes
// the scheduler; compare direct and relayed, which are measured side by side.
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from './lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    deltas: { type: 'string', default: '5000' },
    paced: { type: 'string', default: '2000' },
    interval: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
    transports: { type: 'string', default: 'uws,node' },
    child: { type: 'boolean', default: false },
  },
});

/** Milliseconds on CLOCK_MONOTONIC: comparable between the two processes. */
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Parses "<i>|" pieces of delta text and calls `at(index)` for each. */
function indexer(at) {
  let buffer = '';
  return (text) => {
    buffer += text;
    let bar;
    while ((bar = buffer.indexOf('|')) >= 0) {
      at(Number(buffer.slice(0, bar)));
      buffer = buffer.slice(bar + 1);
    }
  };
}

if (args.child) await child();
else await main();

// ---- child: the provider server and the `ws` client --------------------------------------------

async function child() {
  const { default: WebSocket } = await import('ws');
  let plan = { count: 0, intervalMs: 0 };
  let sentAt = [];
  let clientAt = [];
  let feed = () => undefined;
  let ws;

  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const provider = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const { count, intervalMs } = plan;
      sentAt = new Array(count);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(chunk({ role: 'assistant', content: '' }));
      for (let i = 0; i < count; i++) {
        if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
        sentAt[i] = now();
        if (!res.write(chunk({ content: `${i}|` }))) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.write(chunk({}, 'stop'));
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [], usage: { prompt_tokens: 10, completion_tokens: count, total_tokens: count + 10 } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => provider.listen(0, '127.0.0.1', resolve));

  process.on('message', async (message) => {
    switch (message.op) {
      case 'plan':
        plan = { count: message.count, intervalMs: message.intervalMs };
        clientAt = new Array(message.count);
        feed = indexer((i) => (clientAt[i] ??= now()));
        process.send({ op: 'planned' });
        break;
      case 'connect': {
        ws?.close();
        ws = new WebSocket(message.url);
        await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
        const authed = new Promise((resolve) => ws.once('message', resolve));
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'auth', params: { token: message.token } }));
        await authed;
        ws.on('message', (data) => {
          const { method, params } = JSON.parse(String(data));
          if (method !== 'conversation') return;
          if (params.type === 'delta') feed(params.content);
          else if (params.type === 'end' || params.type === 'error') process.send({ op: 'ended', error: params.type === 'error' ? params.content : undefined });
        });
        process.send({ op: 'connected' });
        break;
      }
      case 'collect':
        process.send({ op: 'collected', sentAt, clientAt });
        break;
      case 'close':
        ws?.close();
        provider.close();
        process.disconnect();
        break;
    }
  });
  process.send({ op: 'ready', port: provider.address().port });
}

// ---- parent: the Trellis host -------------------------------------------------------------------

async function main() {
  for (const pkg of ['core', 'host', 'adapters/db-sqlite', 'adapters/ai-openai', 'adapters/ai-sdk']) {
    if (!existsSync(join(here, '..', 'packages', pkg, 'dist', 'index.js'))) {
      console.error(`packages/${pkg} is not built: run \`pnpm build\` first.`);
      process.exit(1);
    }
  }
  const burst = Number(args.deltas);
  const paced = Number(args.paced);
  const interval = Number(args.interval);
  const rounds = Math.max(1, Number(args.rounds));

  const { aiProvidersServiceIdentifier, provide, PushHub } = await import('@trellis/core');
  const { createHost } = await import('@trellis/host');
  const { sqliteDatabase } = await import('@trellis/db-sqlite');
  const { OpenAiProvider } = await import('@trellis/ai-openai');
  const { pino } = await import('pino');

  // The child process and a request/response helper over its IPC channel.
  const proc = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: 'inherit' });
  const waiting = new Map();
  let onEnded = null;
  proc.on('message', (message) => {
    if (message.op === 'ended') return onEnded?.(message.error);
    const resolve = waiting.get(message.op);
    waiting.delete(message.op);
    resolve?.(message);
  });
  const reply = (op) => new Promise((resolve) => waiting.set(op, resolve));
  const ask = (message, op) => {
    const answer = reply(op);
    proc.send(message);
    return answer;
  };
  const { port } = await reply('ready');
  const conf = { model: 'bench', baseURL: `http://127.0.0.1:${port}/v1`, compatibility: 'compatible' };

  /** The OpenAI adapter, noting when each numbered delta reaches the host (direct and relayed alike). */
  let onRead = () => undefined;
  class TimedProvider extends OpenAiProvider {
    async *chat(c, request) {
      for await (const part of super.chat(c, request)) {
        if (part.type === 'text-delta') onRead(part.delta);
        yield part;
      }
    }
  }
  const adapter = new TimedProvider();

  async function direct(count, intervalMs) {
    await ask({ op: 'plan', count, intervalMs }, 'planned');
    const readAt = new Array(count);
    onRead = indexer((i) => (readAt[i] ??= now()));
    const cpu = process.cpuUsage();
    for await (const part of adapter.chat(adapter.parseConf(conf), { messages: [{ role: 'user', content: 'go' }] })) void part;
    const used = process.cpuUsage(cpu);
    onRead = () => undefined;
    const { sentAt } = await ask({ op: 'collect' }, 'collected');
    if (readAt.some((t) => t === undefined)) throw new Error('direct: deltas missing');
    return {
      rate: (count / (readAt[count - 1] - sentAt[0])) * 1000,
      latency: percentiles(readAt.map((t, i) => t - sentAt[i])),
      cpuUs: (used.user + used.system) / count,
    };
  }

  async function setupHost(transport) {
    const host = createHost({
      config: {
        server: { host: '127.0.0.1', port: 0, transport },
        auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-0123' },
        ai: { pricing: { default: { input: 0, output: 0 } } },
        // The fake model server is on loopback: let it through the outbound network guard.
        network: { allowPrivateNetworks: ['127.0.0.1'] },
        realtime: { maxPushBytes: 1_048_576 },
      },
      database: sqliteDatabase({ path: ':memory:' }),
      adapters: [provide(aiProvidersServiceIdentifier, [adapter])],
      logger: pino({ level: 'silent' }),
    });
    await host.start();
    const url = host.url;
    const call = (method, path, body, token) => request(url, method, path, token, body);
    const user = await call('POST', '/auth/register', { email: `bench-${Date.now()}@example.com`, password: 'correct horse battery' });
    const token = user.token;
    const userId = user.user?.id ?? user.id;
    const model = await call('POST', '/ai/models', { name: 'bench', service: 'openai', conf }, token);
    const bot = await call('POST', '/bot', { name: 'bench', conf: { modelId: model.id } }, token);
    await ask({ op: 'connect', url: `${url.replace(/^http/, 'ws')}/v3/wss?token=${encodeURIComponent(token)}`, token }, 'connected');
    const hub = host.kernel.get(PushHub);

    return {
      /** One streamed turn in a fresh conversation; `timed` also notes when the hub hands each delta to the sockets. */
      async relay(count, intervalMs, timed) {
        const conv = await call('POST', '/conversation', { name: 'bench', botId: bot.id }, token);
        await ask({ op: 'plan', count, intervalMs }, 'planned');
        const readAt = new Array(count);
        onRead = indexer((i) => (readAt[i] ??= now()));
        const handed = [];
        const tap = timed && userId ? await hub.attach('user', userId, { deliver: (frames) => handed.push(now(), frames) }) : null;
        const ended = new Promise((resolve, reject) => (onEnded = (error) => (error ? reject(new Error(JSON.stringify(error))) : resolve())));
        const cpu = process.cpuUsage();
        await call('POST', `/conversation/${conv.id}/messages`, { content: 'go', attrs: { stream: true } }, token);
        await ended;
        const used = process.cpuUsage(cpu);
        tap?.detach();
        onRead = () => undefined;
        onEnded = null;
        const { sentAt, clientAt } = await ask({ op: 'collect' }, 'collected');
        if (readAt.some((t) => t === undefined) || clientAt.some((t) => t == null)) throw new Error('relay: deltas missing');
        const result = {
          rate: (count / (clientAt[count - 1] - sentAt[0])) * 1000,
          latency: percentiles(clientAt.map((t, i) => t - sentAt[i])),
          added: percentiles(clientAt.map((t, i) => t - readAt[i])),
          cpuUs: (used.user + used.system) / count,
        };
        if (tap) {
          const handAt = new Array(count);
          for (let k = 0; k < handed.length; k += 2) {
            const feed = indexer((i) => (handAt[i] ??= handed[k]));
            for (const frame of handed[k + 1]) {
              const { params } = JSON.parse(frame);
              if (params?.type === 'delta') feed(params.content);
            }
          }
          if (handAt.every((t) => t !== undefined)) result.inHost = percentiles(handAt.map((t, i) => t - readAt[i]));
        }
        return result;
      },
      async close() {
        await host.stop();
      },
    };
  }

  const ms = (n) => (n === undefined ? '-' : n.toFixed(3));
  const f = (n) => n.toFixed(0).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const mark = (ok) => (ok ? 'met' : 'MISSED');

  const startLoad = loadavg().map((n) => n.toFixed(1)).join(' ');
  console.log(`AI stream relay: ${f(burst)} deltas as fast as possible, ${f(paced)} deltas every ${interval} ms, ${rounds} interleaved rounds (medians)`);
  console.log('Target (issue 11): the relay adds under 1 ms per delta at p99 and keeps at least 1/2 of the direct rate.\n');
  const rows = [];
  for (const transport of args.transports.split(',')) {
    const host = await setupHost(transport);
    for (let i = 0; i < 2; i++) {
      await direct(500, 0);
      await host.relay(500, 0, false);
    }
    const d = { burst: [], paced: [] };
    const r = { burst: [], paced: [] };
    for (let i = 0; i < rounds; i++) {
      d.burst.push(await direct(burst, 0));
      r.burst.push(await host.relay(burst, 0, false));
      d.paced.push(await direct(paced, interval));
      r.paced.push(await host.relay(paced, interval, true));
    }
    await host.close();
    const med = (list, pick) => median(list.map(pick).filter((n) => n !== undefined));
    const row = {
      transport,
      dRate: med(d.burst, (x) => x.rate),
      rRate: med(r.burst, (x) => x.rate),
      ratio: median(r.burst.map((x, i) => x.rate / d.burst[i].rate)),
      dCpu: med(d.burst, (x) => x.cpuUs),
      rCpu: med(r.burst, (x) => x.cpuUs),
    };
    for (const p of ['p50', 'p99', 'p999']) {
      row[`added_${p}`] = med(r.paced, (x) => x.added[p]);
      row[`inHost_${p}`] = med(r.paced, (x) => x.inHost?.[p]);
      row[`direct_${p}`] = med(d.paced, (x) => x.latency[p]);
      row[`relay_${p}`] = med(r.paced, (x) => x.latency[p]);
    }
    rows.push(row);
    console.log(`${transport}: done`);
  }
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.send({ op: 'close' });
  await exited;

  console.log('\nAdded latency per delta (relayed minus direct, the same deltas in the same turn), ms:');
  console.log('| transport | added p50 | added p99 | added p999 | in-host p50 / p99 / p999 | direct p50 / p99 / p999 | relayed p50 / p99 / p999 | p99 < 1 ms |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const x of rows) {
    console.log(
      `| ${x.transport} | ${ms(x.added_p50)} | ${ms(x.added_p99)} | ${ms(x.added_p999)} | ${ms(x.inHost_p50)} / ${ms(x.inHost_p99)} / ${ms(x.inHost_p999)} | ${ms(x.direct_p50)} / ${ms(x.direct_p99)} / ${ms(x.direct_p999)} | ${ms(x.relay_p50)} / ${ms(x.relay_p99)} / ${ms(x.relay_p999)} | ${mark(x.added_p99 < 1)} |`,
    );
  }
  console.log('\nThroughput (burst), deltas per second, and host CPU per delta:');
  console.log('| transport | direct deltas/s | relayed deltas/s | relayed / direct | host CPU µs per delta direct / relayed (added) | ratio ≥ 0.5 |');
  console.log('|---|---|---|---|---|---|');
  for (const x of rows) {
    console.log(`| ${x.transport} | ${f(x.dRate)} | ${f(x.rRate)} | ${x.ratio.toFixed(2)} | ${f(x.dCpu)} / ${f(x.rCpu)} (+${f(x.rCpu - x.dCpu)}) | ${mark(x.ratio >= 0.5)} |`);
  }
  console.log(`\nLoad average: ${startLoad} at the start, ${loadavg().map((n) => n.toFixed(1)).join(' ')} at the end, on ${availableParallelism()} cores. Above about 1 per core the`);
  console.log('latency tail is mostly the scheduler (compare direct and relayed); CPU per delta is not affected.');
}

function percentiles(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999) };
}

function median(values) {
  if (values.length === 0) return undefined;
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
