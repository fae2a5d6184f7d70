// The open-loop load generator of bench/mixed-load.mjs, in a process of its own: requests go out
// on a fixed schedule whatever the answers (a slow server does not slow the offered rate), each
// with a deadline; it also serves the fake OpenAI-compatible model the conversation sends reach,
// and holds the idle authenticated WebSockets. Loopback only. Driven by its parent over IPC.
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

/** Requests this process keeps outstanding at most; beyond, a send counts as `dropped` (the generator, not the host, is saturated). */
const MAX_OUTSTANDING = 20_000;

// ---- the fake model: answers every chat completion with a short reply, streamed or not ----------
const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 0,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'A short answer from the bench model.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
});
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const model = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    let stream = false;
    try {
      stream = JSON.parse(body).stream === true;
    } catch {
      // not JSON: answer plainly
    }
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(completion);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: 'A short answer ' }));
    res.write(chunk({ content: 'from the bench model.' }));
    res.write(chunk({}, 'stop'));
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [], usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((resolve) => model.listen(0, '127.0.0.1', resolve));

// ---- idle sockets -----------------------------------------------------------------------------
const sockets = [];
async function openIdle(url, tokens, count) {
  let next = 0;
  let opened = 0;
  let failed = 0;
  let firstFailure;
  const one = () =>
    new Promise((resolve) => {
      const token = tokens[next++ % tokens.length];
      const ws = new WebSocket(`${url}?token=${encodeURIComponent(token)}`, { perMessageDeflate: false });
      ws.once('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'auth', params: { token } })));
      ws.once('message', () => {
        opened++;
        sockets.push(ws);
        resolve();
      });
      // A socket the host closes or that never answers counts as failed (the first close reason is kept).
      const fail = (code, reason) => {
        if (settled) return;
        settled = true;
        failed++;
        firstFailure ??= `${code ?? ''} ${String(reason ?? '')}`.trim();
        ws.terminate();
        resolve();
      };
      let settled = false;
      const timer = setTimeout(() => fail('timeout', 'no answer to auth in 30 s'), 30_000);
      ws.once('error', (error) => fail('error', error.message));
      ws.once('close', (code, reason) => fail(code, reason));
      ws.once('message', () => {
        clearTimeout(timer);
        settled = true;
      });
    });
  // A few hundred handshakes at a time.
  for (let i = 0; i < count; i += 200) await Promise.all(Array.from({ length: Math.min(200, count - i) }, one));
  return { opened, failed, firstFailure };
}

// ---- the open-loop schedule (Node's fetch: one keep-alive connection per outstanding request) ----
function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Offers `rate` requests a second for `seconds`, cycling through `plan` (a list of request
 * makers, repeated by weight), each with a `timeoutMs` deadline. Answers per kind: sent, ok (2xx),
 * shed (503 with Retry-After), other statuses, timeouts, errors, latency percentiles of the 2xx.
 */
async function step({ base, rate, seconds, timeoutMs, plan }) {
  const makers = plan.flatMap(({ kind, weight, request }) => Array.from({ length: weight }, () => ({ kind, request })));
  const stats = new Map();
  const stat = (kind) => {
    let s = stats.get(kind);
    if (!s) stats.set(kind, (s = { sent: 0, ok: 0, shed: 0, shedWithoutRetryAfter: 0, other: {}, timeouts: 0, errors: 0, dropped: 0, latencies: [] }));
    return s;
  };
  let outstanding = 0;
  let n = 0;
  const pending = new Set();
  const fire = () => {
    const { kind, request } = makers[n % makers.length];
    const s = stat(kind);
    const i = n++;
    if (outstanding >= MAX_OUTSTANDING) {
      s.dropped++;
      return;
    }
    const made = request(i);
    if (!made) {
      s.dropped++;
      return;
    }
    s.sent++;
    outstanding++;
    const { method, path, body, token, done } = made;
    const started = performance.now();
    const p = fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: globalThis.AbortSignal.timeout(timeoutMs),
    })
      .then(async (response) => {
        await response.arrayBuffer();
        const took = performance.now() - started;
        if (response.status < 300) {
          s.ok++;
          s.latencies.push(took);
        } else if (response.status === 503) {
          s.shed++;
          if (!response.headers.get('retry-after')) s.shedWithoutRetryAfter++;
        } else s.other[response.status] = (s.other[response.status] ?? 0) + 1;
      })
      .catch((error) => {
        if (error?.name === 'TimeoutError' || error?.cause?.name === 'TimeoutError') s.timeouts++;
        else s.errors++;
      })
      .finally(() => {
        done?.();
        outstanding--;
        pending.delete(p);
      });
    pending.add(p);
  };
  const interval = 1000 / rate;
  const start = performance.now();
  const end = start + seconds * 1000;
  let next = start;
  while (performance.now() < end) {
    const now = performance.now();
    while (next <= now && next < end) {
      fire();
      next += interval;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(5, next - performance.now()))));
  }
  const elapsed = (performance.now() - start) / 1000;
  await Promise.allSettled([...pending]);
  const kinds = {};
  let okTotal = 0;
  const all = [];
  for (const [kind, s] of stats) {
    s.latencies.sort((a, b) => a - b);
    okTotal += s.ok;
    all.push(...s.latencies);
    kinds[kind] = { sent: s.sent, ok: s.ok, shed: s.shed, shedWithoutRetryAfter: s.shedWithoutRetryAfter, other: s.other, timeouts: s.timeouts, errors: s.errors, dropped: s.dropped, p50: percentile(s.latencies, 50), p99: percentile(s.latencies, 99) };
  }
  all.sort((a, b) => a - b);
  return { offered: rate, seconds: elapsed, servedPerSecond: okTotal / elapsed, p50: percentile(all, 50), p99: percentile(all, 99), kinds };
}

// ---- the request mix ------------------------------------------------------------------------------
const words = ['password', 'reset', 'billing', 'invoice', 'refund', 'login', 'account', 'delete', 'export', 'import', 'team', 'invite', 'plan', 'upgrade'];
const phrase = (i) => `${words[i % words.length]} ${words[(i * 7 + 3) % words.length]} ${words[(i * 13 + 5) % words.length]}`;

/**
 * The mix, by weight out of 20 (see bench/mixed-load.mjs for what each kind is). A conversation
 * answers one turn at a time (409 otherwise): a send goes to a conversation with no turn under
 * way, and counts as `dropped` when all are busy.
 */
function mix(s) {
  const busy = new Set();
  const freeConversation = (i) => {
    for (let k = 0; k < s.conversations.length; k++) {
      const id = s.conversations[(i + k) % s.conversations.length];
      if (!busy.has(id)) return id;
    }
    return null;
  };
  return [
    { kind: 'read: GET /auth/me', weight: 3, request: () => ({ method: 'GET', path: '/auth/me', token: s.token }) },
    { kind: 'read: GET /documents/{id}/content', weight: 4, request: (i) => ({ method: 'GET', path: `/documents/${s.documents[i % s.documents.length]}/content`, token: s.token }) },
    { kind: 'read: GET /tool/vdb/{class}', weight: 3, request: () => ({ method: 'GET', path: `/tool/vdb/${s.collection}?limit=10`, token: s.token }) },
    { kind: 'write: POST /documents', weight: 2, request: (i) => ({ method: 'POST', path: '/documents', token: s.token, body: { projectId: s.projectId, title: `load ${i}`, content: { type: 'doc', content: [{ type: 'paragraph', attrs: { id: 'p' }, content: [{ type: 'text', text: phrase(i) }] }] } } }) },
    { kind: 'write: POST /tool/vdb/{class}', weight: 2, request: (i) => ({ method: 'POST', path: `/tool/vdb/${s.collection}`, token: s.token, body: { content: `${phrase(i)} added ${i}`, tags: ['load'] } }) },
    { kind: 'run: POST /block/{bid}/api', weight: 2, request: (i) => ({ method: 'POST', path: `/block/${s.blockId}/api`, body: { stream: false, inputs: { n: i } } }) },
    { kind: 'vector search: POST /tool/vdb/{class}/vector', weight: 2, request: (i) => ({ method: 'POST', path: `/tool/vdb/${s.collection}/vector`, token: s.token, body: { content: phrase(i), query: { limit: 10 } } }) },
    { kind: 'conversation send: POST /conversation/{id}/messages', weight: 2, request: (i) => {
        const id = freeConversation(i);
        if (!id) return null;
        busy.add(id);
        return { method: 'POST', path: `/conversation/${id}/messages`, token: s.token, body: { content: phrase(i) }, done: () => busy.delete(id) };
      },
    },
  ];
}

process.on('message', async (message) => {
  try {
    if (message.op === 'idle') {
      // The sockets of a previous host are gone with it.
      for (const ws of sockets.splice(0)) ws.terminate();
      process.send({ op: 'idle', ...(await openIdle(message.url, message.tokens, message.count)) });
    } else if (message.op === 'step') process.send({ op: 'step', result: await step({ ...message, plan: mix(message.state) }) });
    else if (message.op === 'close') {
      for (const ws of sockets) ws.terminate();
      model.close();
      process.disconnect();
    }
  } catch (error) {
    process.send({ op: 'error', message: String(error?.stack ?? error) });
  }
});
process.send({ op: 'ready', modelPort: model.address().port });
