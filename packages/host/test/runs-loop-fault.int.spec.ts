import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeWithRedis, OpenAiWireServer, testDatabases, type TestHost, type WireRequest, type WireTurn } from '@trellis/test-support';
import { sharedDatabase, wf } from './runs.fixtures.js';
import { overHttp, spawnTrellis, waitFor, type TrellisProcess } from './support/processes.js';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 420_000 });

/**
 * A worker killed with `kill -9` in the middle of a parallel loop (issue 26): PostgreSQL and Redis,
 * one `trellis start` host process (`runs.execute: false`) and two `trellis worker` processes
 * (BullMQ). The workflow loops over 50 items, 4 at a time; each iteration calls an http tool
 * action (a tool block) and an LLM block whose model first asks for a call of the same tool, then
 * answers. The tool server (here) records every request's Idempotency-Key and body and answers a
 * result derived from the body after 100 to 300 ms; the model is a local OpenAI wire server that
 * reports token usage. The worker executing the run is killed once 10 or more iterations
 * completed, while an LLM block waits for its tool call (so a model call of the lost attempt is
 * repeated by the next one). Then: the run completes with its 50 outputs in order, every
 * idempotency key reached the tool server and a key seen twice came with the same body (and got
 * the same answer), and the team's ledger for the run holds exactly the tokens the wire server
 * reported (one credit per token), each once, the lost attempt's included.
 *
 * What nobody can bill: an answer the provider sent to a process that died before reading it.
 * So the kill lands at a point where every answer the wire server finished sending was recorded
 * (model call records, read through the API) and no answer is under way: from the moment the
 * test decides to kill, both servers hold what they receive (a gate) and answer it only once the
 * next attempt runs (requests of the dead worker are dropped then: their connections are gone).
 */

const ITEMS = Array.from({ length: 50 }, (_, i) => `item-${String(i).padStart(2, '0')}`);
const digest = (...parts: Array<string | number>) => createHash('sha256').update(parts.join(':')).digest('hex').slice(0, 12);
/** An iteration's result: the LLM block's answer, from the tool block's result and its own tool call's. */
const expectedOutput = (item: string, index: number) => `${item} ${digest('fetch', item, index)} ${digest('model', item, '')}`;

/** Holds requests while closed; `pass()` resolves once it is open. */
class Gate {
  private opened: Promise<void> | null = null;
  private open: () => void = () => undefined;
  get closed(): boolean {
    return this.opened !== null;
  }
  close(): void {
    if (!this.opened) this.opened = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.opened = null;
    this.open();
  }
  async pass(): Promise<void> {
    while (this.opened) await this.opened;
  }
}

/** True once the client went away before the answer was complete. */
function watchGone(res: ServerResponse): () => boolean {
  let gone = false;
  res.on('close', () => {
    if (!res.writableFinished) gone = true;
  });
  return () => gone || res.destroyed || res.socket?.destroyed === true;
}

interface ToolCall {
  key: string;
  body: string;
  answer: string;
  kind: string;
}

/**
 * The tool: `POST /work` answers `{ kind, item, digest }` (digest of kind, item and index) after
 * 100 to 300 ms (from the body), recording the call. `armed`: the next call a model made closes
 * the gate (the moment to kill).
 */
async function startToolServer(gate: Gate) {
  const state = { calls: [] as ToolCall[], armed: false, heldModelCalls: 0 };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const gone = watchGone(res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = JSON.parse(raw) as { kind: string; item: string; index?: number };
        const answer = JSON.stringify({ kind: body.kind, item: body.item, digest: digest(body.kind, body.item, body.index ?? '') });
        state.calls.push({ key: String(req.headers['idempotency-key'] ?? ''), body: raw, answer, kind: body.kind });
        if (body.kind === 'model' && state.armed) {
          state.armed = false;
          gate.close();
        }
        if (body.kind === 'model' && gate.closed) state.heldModelCalls += 1;
        await new Promise((resolve) => setTimeout(resolve, 100 + (parseInt(digest(raw).slice(0, 4), 16) % 201)));
        await gate.pass();
        if (gone()) return;
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The model: asks for one tool call, then answers from its result; usage from the item. */
function modelReply(request: WireRequest): WireTurn {
  const messages: Array<{ role: string; content: unknown }> = request.body?.messages ?? [];
  const prompt = JSON.stringify(messages.find((m) => m.role === 'user')?.content ?? '');
  const item = /item-\d\d/.exec(prompt)?.[0] ?? 'item-??';
  const fetched = /fetched ([0-9a-f]{12})/.exec(prompt)?.[1] ?? '?';
  const n = Number(item.slice(5)) || 0;
  const toolMessage = messages.find((m) => m.role === 'tool');
  if (!toolMessage) {
    const name = String(request.body?.tools?.[0]?.function?.name ?? 'lookup__call');
    return { toolCalls: [{ id: `call_${item}`, name, arguments: JSON.stringify({ body: { kind: 'model', item } }) }], usage: { inputTokens: 30 + n, outputTokens: 7 } };
  }
  const found = /\\?"digest\\?":\\?"([0-9a-f]{12})/.exec(JSON.stringify(toolMessage.content))?.[1] ?? '?';
  return { text: [`${item} `, `${fetched} ${found}`], usage: { inputTokens: 60 + n, outputTokens: 4 + (n % 3) } };
}

/** The wire server behind the gate, counting the usage of every answer it finished sending. */
class GatedWire extends OpenAiWireServer {
  readonly delivered: Array<{ inputTokens: number; outputTokens: number }> = [];
  /** Answers being sent. */
  busy = 0;
  constructor(private readonly gate: Gate) {
    super({ fallback: modelReply });
  }
  protected override async handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const gone = watchGone(res);
    await this.gate.pass();
    if (gone()) return;
    const usage = modelReply(request).usage!;
    this.busy += 1;
    res.on('finish', () => this.delivered.push(usage));
    try {
      await super.handle(request, res, req);
    } finally {
      this.busy -= 1;
    }
  }
}

type RunEvent = { seq?: number; type: string; [key: string]: any };

/** Reads a run's NDJSON stream as it comes; `done` resolves at its end. */
function followRun(response: Response): { events: RunEvent[]; done: Promise<void> } {
  const events: RunEvent[] = [];
  const done = (async () => {
    const decoder = new TextDecoder();
    let rest = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      rest += decoder.decode(chunk, { stream: true });
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as RunEvent);
    }
    if (rest.trim()) events.push(JSON.parse(rest) as RunEvent);
  })();
  return { events, done };
}

const postgres = testDatabases().filter((db) => db.name === 'postgres');

describeWithRedis('a parallel loop whose worker is killed with kill -9', (redisUrl) => {
  if (postgres.length === 0) it.skip('needs TRELLIS_TEST_POSTGRES_URL', () => undefined);
  describe.each(postgres)('on $name', (base) => {
    const db = sharedDatabase(base);
    const gate = new Gate();
    const wire = new GatedWire(gate);
    let tool: Awaited<ReturnType<typeof startToolServer>>;
    let dir: string;
    let databaseUrl: string;
    let host: TrellisProcess & { match: RegExpMatchArray };
    const workers: TrellisProcess[] = [];
    let baseUrl: string;
    let api: TestHost['request'];

    const startWorker = async () => {
      const worker = await spawnTrellis(['worker', '--config', join(dir, 'trellis.config.json'), '--database', databaseUrl], { TRELLIS_LOG_FORMAT: 'json' }, /Trellis worker is executing runs/);
      workers.push(worker);
      return worker;
    };

    beforeAll(async () => {
      // Closed from the start: the first worker's first tool calls wait until the second worker is up.
      gate.close();
      await wire.start();
      tool = await startToolServer(gate);
      dir = await mkdtemp(join(tmpdir(), 'trellis-loop-fault-'));
      databaseUrl = (await db.create()).url;
      const config = {
        auth: { jwtSecret: 'loop-fault-secret-loop-fault-secret-0000' },
        network: { allowPrivateNetworks: ['127.0.0.1'] },
        // One credit per token: the credits charged are the tokens reported. Tool calls wait for
        // the second worker at first (the gate), hence the long tool timeout.
        ai: { pricing: { default: { input: 1000, output: 1000 } }, tools: { timeoutMs: 600_000 } },
        billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1_000_000, monthlyPrice: 0, yearlyPrice: 0 } } },
        adapters: {
          redisUrl,
          redisPrefix: `trellis-test-${process.pid}-${randomUUID()}:`,
          queue: 'bullmq',
          // A killed worker's run is handed out again 10 s after its last lock renewal (long
          // enough that a live worker on a loaded machine keeps its lock).
          bullmq: { concurrency: 1, lockDurationMs: 10_000, stalledIntervalMs: 1_000, maxStalledCount: 1, closeGraceMs: 1_000 },
        },
        // The queue's stalled check hands the run out again; the heartbeat sweep stays out of it.
        runs: { execute: false, staleAfterSeconds: 600 },
      };
      await writeFile(join(dir, 'trellis.config.json'), JSON.stringify(config));
      host = await spawnTrellis(['start', '--config', join(dir, 'trellis.config.json'), '--port', '0', '--host', '127.0.0.1', '--transport', 'node', '--database', databaseUrl], { TRELLIS_LOG_FORMAT: 'json' }, /listening on (http:\/\/[^\s"]+)/);
      baseUrl = host.match[1]!.replace(/\/$/, '');
      api = overHttp(baseUrl).request;
      // Only one worker at first: it takes the run.
      await startWorker();
    });
    afterAll(async () => {
      gate.release();
      await Promise.all(workers.map((worker) => worker.stop()));
      await host?.stop();
      await tool?.close();
      await wire.close();
      await db.cleanup();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('completes with 50 outputs in order, each tool call made for one outcome, every token billed once', async () => {
      const registered = await api('POST', '/auth/register', { body: { email: `loop-fault-${randomUUID()}@example.com`, password: 'loop-fault-password-123' } });
      expect(registered.status, registered.text).toBe(201);
      const token = registered.body.token as string;
      const teams = await api('GET', '/teams', { token });
      const teamId = teams.body.items[0].id as string;
      const project = await api('POST', '/project', { token, body: { name: `Loop fault ${randomUUID()}`, tools: [], access: 'private' } });
      expect(project.status, project.text).toBe(201);
      const model = await api('POST', '/ai/models', { token, body: { name: 'wire', service: 'openai', conf: { model: 'gpt-loop', baseURL: wire.baseURL, apiKey: 'sk-loop' } } });
      expect(model.status, model.text).toBe(201);
      const lookup = await api('POST', '/ai/tools', {
        token,
        body: {
          name: 'lookup',
          desc: 'Looks an item up',
          actions: [{ name: 'call', type: 'http', conf: { method: 'POST', url: `${tool.url}/work`, body: '{{body}}', parameters: { type: 'object', properties: { body: { type: 'object' } }, required: ['body'] } } }],
        },
      });
      expect(lookup.status, lookup.text).toBe(201);
      const content = wf.doc(
        wf.input('things', { type: 'array', required: true }),
        {
          type: 'loopBlock',
          attrs: { id: 'each', name: 'each', items: 'things', concurrency: 4 },
          content: [
            wf.tool('fetch', lookup.body.id, 'call', { body: { kind: 'fetch', item: '{{ item }}', index: '{{ index }}' } }),
            wf.llm('describe', model.body.id, 'Describe {{ item }}, fetched {{ fetch.digest }}.', { tools: [lookup.body.id] }),
          ],
        },
        wf.output('out', '{{ each }}'),
      );
      const doc = await api('POST', '/documents', { token, body: { projectId: project.body.id, title: 'Loop under fault', content } });
      expect(doc.status, doc.text).toBe(201);
      const documentId = doc.body.id as string;
      const run = (runId: string) => api('GET', `/documents/${documentId}/runs/${runId}`, { token });
      const modelCalls = async (runId: string) => {
        const items: any[] = [];
        for (let page = 1; ; page++) {
          const r = await api('GET', `/documents/${documentId}/runs/${runId}/model-calls?size=100&page=${page}`, { token });
          expect(r.status, r.text).toBe(200);
          items.push(...r.body.items);
          if (r.body.items.length < 100) return items;
        }
      };

      const response = await fetch(`${baseUrl}/documents/${documentId}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { things: ITEMS }, format: 'ndjson', timeout: 600 }),
      });
      expect(response.status).toBe(200);
      const stream = followRun(response);
      const runId = (await waitFor(async () => stream.events.find((e) => e.type === 'run_start'), Boolean, 'run_start', 120_000))!.runId as string;

      // The first worker executes the run (its first tool calls wait at the gate); then the second starts.
      await waitFor(async () => tool.state.calls.length, (n) => n >= 1, 'the first tool call', 120_000);
      const [first] = workers;
      await startWorker();
      gate.release();

      // Once 10 iterations completed, the next tool call a model makes closes the gate: that LLM
      // block waits for its tool call when the worker dies.
      const completed = () => new Set(stream.events.filter((e) => e.type === 'block_complete' && e.blockId === 'llm-describe').map((e) => e.path as string));
      await waitFor(async () => completed().size, (n) => n >= 10, '10 completed iterations', 300_000);
      tool.state.armed = true;
      await waitFor(async () => gate.closed, Boolean, 'a model tool call after 10 iterations', 120_000);
      // Every answer the wire server finished sending is recorded, none is under way, and every
      // iteration the stream reported complete is checkpointed: then the worker dies.
      const beforeKill = await waitFor(
        async () => ({ calls: await modelCalls(runId), record: (await run(runId)).body }),
        ({ calls, record }) => {
          const stored = new Set((record.sessions as any[]).filter((s) => s.blockId === 'llm-describe' && s.status === 'completed').map((s) => s.path as string));
          return wire.busy === 0 && calls.length === wire.delivered.length && [...completed()].every((path) => stored.has(path));
        },
        'the model calls recorded and the completed iterations checkpointed',
        120_000,
        50,
      );
      first!.child.kill('SIGKILL');
      expect((await first!.exited).signal).toBe('SIGKILL');
      const doneBeforeKill = new Set((beforeKill.record.sessions as any[]).filter((s) => s.blockId === 'llm-describe' && s.status === 'completed').map((s) => s.path as string));
      expect(doneBeforeKill.size).toBeGreaterThanOrEqual(10);
      expect(doneBeforeKill.size).toBeLessThan(50);
      expect(tool.state.heldModelCalls).toBeGreaterThanOrEqual(1);
      const deliveredBeforeKill = wire.delivered.length;

      // The other worker takes the run once the lock of the dead one expired; what the dead one
      // still waited for is dropped (its connections are gone), the rest answered.
      await waitFor(async () => (await run(runId)).body.attempts as number, (n) => n >= 2, 'the second attempt', 180_000, 250);
      gate.release();
      await stream.done;

      // The stream: one run_complete at its end, sequence numbers rising without repeats.
      const events = stream.events.filter((e) => e.type !== 'ping');
      expect(events.at(-1)!.type).toBe('run_complete');
      expect(events.filter((e) => e.type === 'run_complete')).toHaveLength(1);
      const seqs = events.map((e) => e.seq!);
      expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!)).toBe(true);

      // 50 outputs in item order.
      const record = (await run(runId)).body;
      expect(record.status, JSON.stringify(record.error)).toBe('completed');
      expect(record.attempts).toBe(2);
      expect(record.output).toEqual(ITEMS.map((item, index) => expectedOutput(item, index)));
      // Iterations completed before the kill were not run again.
      for (const path of doneBeforeKill) {
        expect(events.filter((e) => e.type === 'block_start' && e.path === path && e.blockId === 'tool-fetch'), path).toHaveLength(1);
      }

      // Every key reached the tool server; a key seen twice came with the same body and got the same answer.
      const calls = tool.state.calls;
      const byKey = new Map<string, ToolCall[]>();
      for (const call of calls) byKey.set(call.key, [...(byKey.get(call.key) ?? []), call]);
      expect(calls.every((call) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(call.key))).toBe(true);
      expect(byKey.size).toBe(100);
      for (const [key, seen] of byKey) {
        expect(new Set(seen.map((call) => call.body)).size, `bodies of ${key}`).toBe(1);
        expect(new Set(seen.map((call) => call.answer)).size, `answers of ${key}`).toBe(1);
      }
      const resultKeys = new Set(events.filter((e) => e.type === 'tool_result').map((e) => e.idempotencyKey as string));
      expect(resultKeys.size).toBe(100);
      for (const key of resultKeys) expect(byKey.has(key), key).toBe(true);
      // The model's tool call the dead worker waited for was made again, with its key.
      expect([...byKey.values()].some((seen) => seen.length > 1 && seen[0]!.kind === 'model')).toBe(true);

      // Every token the wire server reported is in one model call record, and the ledger for the
      // run is exactly those tokens (one credit each) plus the run's own credit.
      const records = await modelCalls(runId);
      const sum = (list: Array<{ inputTokens: number; outputTokens: number }>) => list.reduce((total, u) => total + u.inputTokens + u.outputTokens, 0);
      expect(wire.delivered.length).toBeGreaterThan(deliveredBeforeKill);
      expect(records).toHaveLength(wire.delivered.length);
      expect(sum(records.map((r) => r.usage))).toBe(sum(wire.delivered));
      expect(records.some((r) => r.attempt === 1)).toBe(true);
      // A model call of the lost attempt and its repetition in the next one: both recorded, both billed.
      const repeated = records.filter((r) => r.attempt === 2 && r.retries >= 1);
      expect(repeated.length).toBeGreaterThanOrEqual(1);
      for (const again of repeated) expect(records.some((r) => r.attempt === 1 && r.blockPath === again.blockPath && r.callIndex === again.callIndex)).toBe(true);
      const ledger = await api('GET', `/billing/credits/ledger?teamId=${teamId}&size=100`, { token });
      expect(ledger.status, ledger.text).toBe(200);
      const entries = (ledger.body.data.items as Array<{ delta: number; reason: string }>).filter((entry) => entry.reason?.includes(runId));
      expect(entries.length).toBeGreaterThanOrEqual(2);
      expect(-entries.reduce((total, entry) => total + entry.delta, 0)).toBe(1 + sum(wire.delivered));
    });
  });
});
