import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, CreditService, provide, TeamService } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { installTracing, type InstalledTracing } from '@trellis/host';
import { OpenAiWireServer, sharedDatabase, startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, eventually } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { startWeatherServer, UserSocket } from './support/ai-clients.js';

// Model call records, GenAI spans and run metrics (docs/observability.md), through the real AI
// layer: the OpenAI adapter against a local server speaking OpenAI's wire format, a real http tool.
const exporter = new InMemorySpanExporter();
let tracing: InstalledTracing;
beforeAll(() => {
  tracing = installTracing({ serviceName: 'trellis-model-calls', exporter, outbound: false });
});
afterAll(() => tracing?.shutdown());

// One credit per token, so the credits charged are the tokens reported; small holds (a free team has 100 credits).
const pricing = { default: { input: 1000, output: 1000 }, reserveInputTokens: 20, reserveOutputTokens: 10 };

const spansOfRun = (runId: string): ReadableSpan[] => {
  const all = exporter.getFinishedSpans();
  const run = all.find((s) => s.name === 'invoke_workflow' && s.attributes['trellis.run.id'] === runId);
  if (!run) return [];
  return all.filter((s) => s.spanContext().traceId === run.spanContext().traceId);
};

async function balanceOf(t: TestHost, userId: string): Promise<number> {
  const em = t.kernel.fork();
  const team = (await t.kernel.get(TeamService).firstTeam(em, userId))!.team.id;
  const { balance } = await t.kernel.get(CreditService).balance(em, team);
  return balance.grantCredits + balance.purchaseCredits;
}

describe.each(testDatabases())('model call records on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let host: TestHost;
    let t: TestHost;
    let wire: OpenAiWireServer;
    let weather: Awaited<ReturnType<typeof startWeatherServer>>;
    beforeAll(async () => {
      wire = await new OpenAiWireServer({ apiKey: 'sk-calls' }).start();
      weather = await startWeatherServer();
      host = await startTestHost(db, transport, { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])], config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, ai: { pricing } } });
      t = host;
    });
    afterAll(async () => {
      await host?.close();
      await wire?.close();
      await weather?.close();
    });

    async function setup(token: string): Promise<{ modelId: string; toolId: string }> {
      const model = await t.request('POST', '/ai/models', { token, body: { name: `wire ${Date.now()}`, service: 'openai', conf: { model: 'gpt-calls', baseURL: wire.baseURL, apiKey: 'sk-calls' } } });
      expect(model.status, model.text).toBe(201);
      const tool = await t.request('POST', '/ai/tools', {
        token,
        body: { name: 'weather', actions: [{ name: 'forecast', type: 'http', conf: { url: `${weather.url}/weather?city={{city}}`, response: { path: 'data' }, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }] },
      });
      expect(tool.status, tool.text).toBe(201);
      return { modelId: model.body.id, toolId: tool.body.id };
    }

    it('a run with two LLM blocks and a tool call has two model call records, one tool span, and the tokens the provider reported', async () => {
      const owner = await actor(t);
      const { modelId, toolId } = await setup(owner.token);
      const content = wf.doc(
        wf.input('city'),
        wf.llm('plan', modelId, 'Plan a trip to {{ city }}', { system: 'Be brief.' }),
        wf.tool('sky', toolId, 'forecast', { city: '{{ city }}' }),
        wf.llm('answer', modelId, 'Given {{ sky }}, answer: {{ plan }}'),
        wf.output('out', '{{ answer }}'),
      );
      const { documentId } = await workflowDocument(t, owner.token, content);
      const before = await balanceOf(t, owner.userId);
      wire.enqueue({ text: ['Pack ', 'light.'], usage: { inputTokens: 17, outputTokens: 4 } }, { text: ['Sunny: go.'], usage: { inputTokens: 23, outputTokens: 6 } });
      exporter.reset();
      const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false, inputs: { city: 'Oslo' } } });
      expect(r.status, r.text).toBe(200);
      const runId = r.body.runId;
      const record = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (x) => x.body.status === 'completed');

      // The records: exactly two, in order, with what was sent and what the provider reported.
      const calls = await t.request('GET', `/documents/${documentId}/runs/${runId}/model-calls`, { token: owner.token });
      expect(calls.status, calls.text).toBe(200);
      expect(calls.body).toMatchObject({ total: 2, page: 1, size: 20 });
      const [plan, answer] = calls.body.items;
      expect(plan).toMatchObject({ operation: 'chat', modelId, provider: 'openai', model: 'gpt-calls', runId, attempt: 1, blockPath: 'llm-plan', callIndex: 1, status: 'completed', retries: 0, finishReason: 'stop' });
      expect(plan.usage).toEqual({ inputTokens: 17, outputTokens: 4, cachedTokens: null });
      expect(answer.usage).toEqual({ inputTokens: 23, outputTokens: 6, cachedTokens: null });
      expect(plan.credits).toBe(21);
      expect(answer.credits).toBe(29);
      expect(plan.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Plan a trip to Oslo' }]);
      expect(answer.messages.at(-1).content).toContain('Pack light.');
      expect(plan.firstTokenMs).toBeLessThanOrEqual(plan.durationMs);
      // Paging.
      const second = await t.request('GET', `/documents/${documentId}/runs/${runId}/model-calls?size=1&page=2`, { token: owner.token });
      expect(second.body).toMatchObject({ total: 2, page: 2, size: 1 });
      expect(second.body.items.map((c: { id: string }) => c.id)).toEqual([answer.id]);
      // Someone who may not read the run reads none of its calls.
      const stranger = await actor(t);
      expect((await t.request('GET', `/documents/${documentId}/runs/${runId}/model-calls`, { token: stranger.token })).status).toBe(404);

      // Credits: the run's one credit plus each token once; the balance moved by as much.
      expect(record.body.usedCredits).toBe(1 + 17 + 4 + 23 + 6);
      expect(before - (await balanceOf(t, owner.userId))).toBe(record.body.usedCredits);

      // The spans: two chat spans and one execute_tool span, children of the run's span, with the convention's names.
      const spans = await eventually(async () => spansOfRun(runId), (s) => s.filter((x) => x.name.startsWith('chat ')).length === 2);
      const run = spans.find((s) => s.name === 'invoke_workflow')!;
      const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
      expect(chats).toHaveLength(2);
      expect(tools).toHaveLength(1);
      for (const span of [...chats, ...tools]) expect(span.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
      expect(tools[0]!.name).toBe('execute_tool forecast');
      expect(tools[0]!.attributes['gen_ai.tool.name']).toBe('forecast');
      expect(tools[0]!.attributes['gen_ai.tool.call.id']).toBe('tool-sky:forecast');
      expect(chats.map((s) => s.name)).toEqual(['chat gpt-calls', 'chat gpt-calls']);
      expect(chats.map((s) => [s.attributes['gen_ai.usage.input_tokens'], s.attributes['gen_ai.usage.output_tokens']])).toEqual([
        [17, 4],
        [23, 6],
      ]);
      for (const span of chats) {
        expect(span.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-calls', 'gen_ai.response.model': 'gpt-calls', 'trellis.run.id': runId });
        expect(span.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
      }

      // The metrics, parsed from the registry's Prometheus text.
      const text = await t.kernel.metrics.render();
      const families = parsePrometheusTextFormat(text);
      // The `_count` of a labelled histogram, from the text (the parser merges a histogram's labelled series).
      const count = (name: string, labels: Record<string, string>) => {
        const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
        const line = text.split('\n').find((l) => l.startsWith(`${name}_count{`) && wanted.every((pair) => l.slice(l.indexOf('{') + 1, l.indexOf('}')).split(',').includes(pair)));
        return line ? Number(line.split(' ').at(-1)) : 0;
      };
      const value = (name: string, labels: Record<string, string>) =>
        families.find((f) => f.name === name)?.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)).reduce((sum, m) => sum + Number(m.value ?? m.count ?? 0), 0) ?? -1;
      expect(value('trellis_ai_tokens_total', { model: 'gpt-calls', direction: 'input' })).toBeGreaterThanOrEqual(40);
      expect(value('trellis_ai_tokens_total', { model: 'gpt-calls', direction: 'output' })).toBeGreaterThanOrEqual(10);
      expect(value('trellis_ai_credits_total', { model: 'gpt-calls' })).toBeGreaterThanOrEqual(50);
      expect(value('trellis_runs_total', { status: 'completed' })).toBeGreaterThanOrEqual(1);
      expect(count('trellis_run_duration_seconds', { status: 'completed' })).toBeGreaterThanOrEqual(1);
      expect(count('trellis_block_duration_seconds', { type: 'llmBlock', status: 'completed' })).toBeGreaterThanOrEqual(2);
      expect(count('trellis_block_duration_seconds', { type: 'toolBlock', status: 'completed' })).toBeGreaterThanOrEqual(1);
      expect(families.find((f) => f.name === 'trellis_run_queue_depth')?.metrics.map((m) => m.labels?.state).sort()).toEqual(['queued', 'running']);
    });

    it('records the calls of a conversation turn, readable per turn by its members', async () => {
      const user = await t.register();
      const { modelId, toolId } = await setup(user.token);
      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId, toolIds: [toolId] } } });
      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
      const convId = conv.body.id;
      wire.enqueue({ toolCalls: [{ id: 'call_c1', name: 'weather__forecast', arguments: '{"city":"Rome"}' }], usage: { inputTokens: 12, outputTokens: 5 } }, { text: ['Sunny.'], usage: { inputTokens: 19, outputTokens: 2 } });
      const socket = await UserSocket.open(t.wsUrl, user.token);
      try {
        const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Weather in Rome?', attrs: { stream: true, tool_auto: true } } });
        expect(r.status).toBe(202);
        await socket.until((n) => n.type === 'end' && n.content.status === 'completed');
      } finally {
        socket.close();
      }
      const events = await fetch(`${t.url}/conversation/${convId}/events`, { headers: { authorization: `Bearer ${user.token}` } }).then((x) => x.text());
      const turnId = /"turnId":"([0-9a-f-]{36})"/.exec(events)![1]!;
      const calls = await eventually(() => t.request('GET', `/conversation/${convId}/turns/${turnId}/model-calls`, { token: user.token }), (x) => x.body.total === 2);
      const [first, last] = calls.body.items;
      expect(first).toMatchObject({ conversationId: convId, turnId, callIndex: 1, runId: null, finishReason: 'tool_calls', toolNames: ['weather__forecast'], usage: { inputTokens: 12, outputTokens: 5 } });
      expect(first.toolCalls).toEqual([{ toolCallId: 'call_c1', toolName: 'weather__forecast', input: { city: 'Rome' } }]);
      expect(first.tools.map((d: { name: string }) => d.name)).toEqual(['weather__forecast']);
      expect(last).toMatchObject({ callIndex: 2, usage: { inputTokens: 19, outputTokens: 2 }, status: 'completed' });
      const outsider = await t.register();
      expect((await t.request('GET', `/conversation/${convId}/turns/${turnId}/model-calls`, { token: outsider.token })).status).toBe(404);
    });
  });
});

/** An http tool whose first call hangs until `release` (the worker is stopped meanwhile); later calls answer at once. */
async function startHangingTool(): Promise<{ url: string; calls: number; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  const state = { calls: 0 };
  const server: Server = createServer((req, res) => {
    state.calls++;
    if (state.calls === 1) {
      held.push(res);
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ data: { sky: 'clear' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get calls() {
      return state.calls;
    },
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.each(testDatabases())('every token billed once on $name', (base) => {
  const db = sharedDatabase(base);
  afterAll(() => db.cleanup());

  it('charges a lost attempt\'s model call once, and the retried block\'s calls once: the ledger equals the usage the provider reported', async () => {
    const wire = await new OpenAiWireServer({ apiKey: 'sk-once' }).start();
    const tool = await startHangingTool();
    const adapters = [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])];
    const config = { network: { allowPrivateNetworks: ['127.0.0.1'] }, ai: { pricing } };
    const first = await startTestHost(db, 'node', { adapters, config: { ...config, runs: { shutdownGraceMs: 0 } } as never });
    let second: TestHost | undefined;
    try {
      const owner = await actor(first);
      const model = await first.request('POST', '/ai/models', { token: owner.token, body: { name: 'once', service: 'openai', conf: { model: 'gpt-once', baseURL: wire.baseURL, apiKey: 'sk-once' } } });
      const weather = await first.request('POST', '/ai/tools', {
        token: owner.token,
        body: { name: 'sky', actions: [{ name: 'look', type: 'http', conf: { url: `${tool.url}/sky`, response: { path: 'data' }, parameters: { type: 'object', properties: {} } } }] },
      });
      const { documentId } = await workflowDocument(first, owner.token, wf.doc(wf.llm('ask', model.body.id, 'Look at the sky', { tools: [weather.body.id] })));
      const before = await balanceOf(first, owner.userId);
      // Attempt 1: the model answers with a tool call (reported usage 9 + 3), then the tool hangs and the worker goes away.
      // Attempt 2: the block runs again: the same tool call (9 + 3), then the answer (14 + 2).
      wire.enqueue(
        { toolCalls: [{ id: 'call_1', name: 'sky__look', arguments: '{}' }], usage: { inputTokens: 9, outputTokens: 3 } },
        { toolCalls: [{ id: 'call_2', name: 'sky__look', arguments: '{}' }], usage: { inputTokens: 9, outputTokens: 3 } },
        { text: ['Clear.'], usage: { inputTokens: 14, outputTokens: 2 } },
      );
      // Not awaited: the answer never comes from this host (it stops mid-run).
      void first.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } }).catch(() => null);
      const runId = await eventually(
        async () => (await first.request('GET', `/documents/${documentId}/runs`, { token: owner.token })).body.items[0]?.id as string | undefined,
        (id) => id !== undefined,
      );
      await eventually(async () => tool.calls, (n) => n >= 1, 'the tool call of attempt 1');
      await first.close();

      second = await startTestHost(db, 'node', { adapters, config: { ...config, runs: { staleAfterSeconds: 3, reaperIntervalMs: 200 } } as never });
      const record = await eventually(() => second!.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed', 'the run completed in the second host');
      expect(record.body.attempts).toBe(2);
      expect(record.body.output).toBe('Clear.');
      const calls = (await second.request('GET', `/documents/${documentId}/runs/${runId}/model-calls`, { token: owner.token })).body;
      expect(calls.items.map((c: { attempt: number; callIndex: number; retries: number }) => [c.attempt, c.callIndex, c.retries])).toEqual([
        [1, 1, 0],
        [2, 1, 1],
        [2, 2, 0],
      ]);
      // What the provider reported, over every request it answered.
      const reported = 9 + 3 + (9 + 3) + (14 + 2);
      expect(wire.chatRequests).toHaveLength(3);
      // The run's hold (31) is settled in full; what the calls used beyond it is charged once more, after.
      expect(record.body.usedCredits).toBe(record.body.reservedCredits);
      expect(before - (await balanceOf(second, owner.userId))).toBe(1 + reported);
    } finally {
      await second?.close();
      await tool.close();
      await wire.close();
    }
  }, 120_000);
});
