import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide, toolCallIdempotencyKey } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, sharedDatabase, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse } from './support/run-clients.js';

/** An HTTP tool that counts its calls by `Idempotency-Key` and answers `{ calls, key }` (calls: how many times it saw the key). */
export async function startCountingTool(): Promise<{ url: string; keys: string[]; close(): Promise<void> }> {
  const keys: string[] = [];
  const server: Server = createServer((req, res) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    keys.push(key);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ calls: keys.filter((k) => k === key).length, key }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const aiConfig = { network: { allowPrivateNetworks: ['127.0.0.1'] } };

async function createModel(t: TestHost, token: string, wire: OpenAiWireServer): Promise<string> {
  // compatibility "openai": the AI SDK's OpenAI chat model, which sends `response_format` `json_schema`.
  const r = await t.request('POST', '/ai/models', { token, body: { name: `wire ${Date.now()}`, service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-effects', compatibility: 'openai' } } });
  if (r.status !== 201) throw new Error(`model create failed: ${r.status} ${r.text}`);
  return r.body.id;
}

async function createTool(t: TestHost, token: string, url: string): Promise<string> {
  const r = await t.request('POST', '/ai/tools', {
    token,
    body: { name: 'counter', actions: [{ name: 'bump', type: 'http', conf: { method: 'POST', url: `${url}/bump`, body: { n: '{{n}}' }, parameters: { type: 'object', properties: { n: { type: 'number' } } } } }] },
  });
  if (r.status !== 201) throw new Error(`tool create failed: ${r.status} ${r.text}`);
  return r.body.id;
}

const person = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false };

describe.each(testDatabases())('structured output and exactly-once tool calls on $name', (db) => {
  let t: TestHost;
  let wire: OpenAiWireServer;
  let tool: Awaited<ReturnType<typeof startCountingTool>>;
  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-effects' }).start();
    tool = await startCountingTool();
    t = await startTestHost(db, 'node', { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])], config: aiConfig });
  });
  afterAll(async () => {
    await t?.close();
    await wire?.close();
    await tool?.close();
  });

  it('an LLM block with outputSchema asks for JSON, repairs an invalid answer and outputs the parsed object', async () => {
    const owner = await actor(t);
    const modelId = await createModel(t, owner.token, wire);
    wire.reset();
    wire.enqueue({ text: ['Ada is ', '36.'] }, { text: ['{"name":"Ada",', '"age":"36"}'] }, { text: ['```json\n{"name":"Ada","age":36}\n```'] });
    const content = wf.doc(wf.llm('who', modelId, 'Who wrote the first program?', { outputSchema: person }), wf.output('out', '{{ who.name }} ({{ who.age }})'), wf.code('typed', 'return typeof blocks.who.age;'));
    const { documentId } = await workflowDocument(t, owner.token, content);
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
    const ctx = Object.fromEntries(r.body.globalCtx.map((e: { name: string; value: unknown }) => [e.name, e.value]));
    expect(ctx).toMatchObject({ who: { name: 'Ada', age: 36 }, out: 'Ada (36)', typed: 'number' });
    const [first, second, third] = wire.chatRequests;
    expect(first!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema: { required: ['name', 'age'] } } });
    expect(JSON.stringify(first!.body.messages[0])).toContain('JSON Schema');
    // Each repair carries the previous answer and what was wrong with it.
    expect(second!.body.messages.at(-2)).toMatchObject({ role: 'assistant', content: 'Ada is 36.' });
    expect(second!.body.messages.at(-1).content).toMatch(/not JSON/);
    expect(third!.body.messages.at(-1).content).toMatch(/age.*integer/);
    expect(wire.chatRequests).toHaveLength(3);
  });

  it('fails the block with structured_output_invalid once maxRepairs tries failed', async () => {
    const owner = await actor(t);
    const modelId = await createModel(t, owner.token, wire);
    wire.reset();
    wire.enqueue({ text: ['no'] }, { text: ['still no'] }, { text: ['{"name":"never asked","age":1}'] });
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('who', modelId, 'Who?', { outputSchema: person, maxRepairs: 1 })));
    const { events } = await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' } });
    expect(events.find((e) => e.type === 'block_error')?.data).toMatchObject({ blockId: 'llm-who', code: 'structured_output_invalid' });
    expect(events.at(-2)).toMatchObject({ type: 'run_error', data: { error: 'structured_output_invalid' } });
    expect(wire.chatRequests).toHaveLength(2);
  });

  it('refuses an outputSchema that is not a JSON Schema with invalid_workflow', async () => {
    const owner = await actor(t);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('who', 'm', 'Who?', { outputSchema: { type: 'not-a-type' } })));
    const r = await t.request('POST', `/documents/${documentId}/run`, { token: owner.token, body: { stream: false } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_workflow');
    expect(r.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'content.0.attrs.outputSchema', constraint: 'isJsonSchema' })]));
  });

  it('a tool block sends an Idempotency-Key derived from the run, the block and the call, and records it on tool_result', async () => {
    const owner = await actor(t);
    const toolId = await createTool(t, owner.token, tool.url);
    const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.tool('bump', toolId, 'bump', { n: 1 })));
    const before = tool.keys.length;
    const { events } = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: {} });
    const runId = events[0]!.data.runId;
    const key = toolCallIdempotencyKey({ runId, path: 'tool-bump', iteration: 0, callIndex: 0 });
    expect(tool.keys.slice(before)).toEqual([key]);
    expect(events.find((e) => e.type === 'tool_result')?.data).toMatchObject({ blockId: 'tool-bump', idempotencyKey: key, result: { calls: 1, key } });
  });
});

// A host stops right after a tool call of an LLM block returned; the next host retries the block:
// the model asks for the same call, which is answered from the run's log, not called again.
describe.each(testDatabases())('a retried run does not repeat a recorded tool call on $name', (base) => {
  const db = sharedDatabase(base);
  afterAll(() => db.cleanup());

  it('the tool is called once, with the same key on both attempts', async () => {
    const wire = await new OpenAiWireServer({ apiKey: 'sk-effects' }).start();
    const tool = await startCountingTool();
    const adapters = [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])];
    const first = await startTestHost(db, 'node', { adapters, config: { ...aiConfig, runs: { shutdownGraceMs: 0 } } as never });
    let second: TestHost | undefined;
    try {
      const owner = await actor(first);
      const modelId = await createModel(first, owner.token, wire);
      const toolId = await createTool(first, owner.token, tool.url);
      const call = { toolCalls: [{ id: 'call_bump', name: 'counter__bump', arguments: '{"n":7}' }] };
      // Attempt 1: the tool call, then a second model call that hangs until the host goes away.
      wire.enqueue(call, { text: ['Bumped '], holdAfter: 1 });
      const { documentId } = await workflowDocument(first, owner.token, wf.doc(wf.llm('work', modelId, 'Bump it.', { tools: [toolId] }), wf.output('out', '{{ work }}')));
      // A streaming client that goes away: the run goes on without it.
      const client = new AbortController();
      const started = await fetch(`${first.url}/documents/${documentId}/run`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ format: 'ndjson' }), signal: client.signal });
      expect(started.status).toBe(200);
      await wire.held();
      client.abort();
      expect(tool.keys).toHaveLength(1);
      await first.close();

      // Attempt 2: the model asks for the same call again, then answers.
      wire.enqueue(call, { text: ['Bumped once.'] });
      second = await startTestHost(db, 'node', { adapters, config: { ...aiConfig, runs: { staleAfterSeconds: 3, reaperIntervalMs: 200 } } as never });
      const runs = await second.request('GET', `/documents/${documentId}/runs`, { token: owner.token });
      const runId = runs.body.items[0].id;
      const { events } = await readSse(`${second.url}/documents/${documentId}/runs/${runId}/events`, { token: owner.token });
      expect(events.at(-1)!.type).toBe('run_complete');
      const record = await eventually(() => second!.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
      expect(record.body).toMatchObject({ output: 'Bumped once.', attempts: 2 });

      const key = toolCallIdempotencyKey({ runId, path: 'llm-work', iteration: 0, callIndex: 0 });
      expect(tool.keys).toEqual([key]);
      const results = events.filter((e) => e.type === 'tool_result');
      expect(results).toHaveLength(2);
      for (const result of results) expect(result.data).toMatchObject({ idempotencyKey: key, result: { calls: 1, key } });
      // The model of attempt 2 was told the recorded result.
      const toolMessage = wire.chatRequests.at(-1)!.body.messages.find((m: { role: string }) => m.role === 'tool');
      expect(JSON.parse(toolMessage.content)).toEqual({ calls: 1, key });
    } finally {
      await second?.close();
      await first.close().catch(() => undefined);
      await wire.close();
      await tool.close();
    }
  });
});
