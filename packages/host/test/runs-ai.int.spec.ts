import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, eventually } from './documents.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse } from './support/run-clients.js';

// LLM blocks through the real AI layer: the ai module's AiGateway, the OpenAI adapter (AI SDK), and
// a local server speaking OpenAI's wire format.
describe.each(testDatabases())('LLM blocks through the OpenAI adapter on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let wire: OpenAiWireServer;
    beforeAll(async () => {
      wire = await new OpenAiWireServer({ apiKey: 'sk-runs' }).start();
      t = await startTestHost(db, transport, { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])], config: { network: { allowPrivateNetworks: ['127.0.0.1'] } } });
    });
    afterAll(async () => {
      await t?.close();
      await wire?.close();
    });

    async function model(token: string): Promise<string> {
      const r = await t.request('POST', '/ai/models', { token, body: { name: `wire ${Date.now()}`, service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-runs' } } });
      if (r.status !== 201) throw new Error(`model create failed: ${r.status} ${r.text}`);
      return r.body.id;
    }

    it('streams the model\'s deltas as block_chunk events (SSE) and records tokens per model', async () => {
      const owner = await actor(t);
      const modelId = await model(owner.token);
      const content = wf.doc(wf.input('city'), wf.llm('reply', modelId, 'Weather in {{ city }}?'), wf.output('out', '{{ reply }}'));
      const { documentId } = await workflowDocument(t, owner.token, content);
      const { events } = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { inputs: { city: 'Oslo' } } });
      expectDense(events.map((e) => e.seq));
      const text = events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta).join('');
      expect(text).toBe('You said: Weather in Oslo?');
      expect(events.at(-1)).toMatchObject({ type: 'run_complete', data: { timedOut: false, completedBlocks: 3 } });
      expect(wire.chatRequests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Weather in Oslo?' });
      const runId = events[0]!.data.runId;
      const record = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
      expect(record.body.output).toBe('You said: Weather in Oslo?');
      const usage = record.body.usage.models[modelId];
      expect(usage.calls).toBe(1);
      expect(usage.inputTokens).toBeGreaterThan(0);
      expect(usage.outputTokens).toBeGreaterThan(0);
      expect(record.body.usedCredits).toBeGreaterThanOrEqual(1);
      expect(record.body.usedCredits).toBeLessThanOrEqual(record.body.reservedCredits);
    });

    it('a provider error fails the block with the AI error code (NDJSON)', async () => {
      const owner = await actor(t);
      const modelId = await model(owner.token);
      wire.enqueue({ error: { status: 400, message: 'This model does not exist.' } });
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('reply', modelId, 'hello')));
      const { events } = await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' } });
      const failed = events.find((e) => e.type === 'block_error')!;
      expect(failed.data).toMatchObject({ blockId: 'llm-reply', code: 'ai_bad_request' });
      expect(events.at(-2)).toMatchObject({ type: 'run_error', data: { error: 'ai_bad_request' } });
    });

    it('a model the user may not use fails the block with model_not_found', async () => {
      const owner = await actor(t);
      const other = await actor(t);
      const modelId = await model(other.token);
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.llm('reply', modelId, 'hello')));
      const { events } = await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson' } });
      expect(events.find((e) => e.type === 'block_error')?.data.code).toMatch(/not_found/);
    });
  });
});
