import { OpenAiProvider } from '@trellis/ai-openai';
import { aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiWireServer, startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settled, upload } from './knowledge.fixtures.js';

// The optional rerank step of retrieval, end to end: a knowledge base over HTTP, an AI model of
// the real OpenAI adapter pointed at a local server speaking OpenAI's wire format, whose scripted
// ratings reorder the passages.
describe.each(testDatabases())('knowledge retrieval with an AI rerank on $name', (db) => {
  let t: TestHost;
  let wire: OpenAiWireServer;
  let request: TestHost['request'];
  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-rerank' }).start();
    t = await startTestHost(db, transports[0]!, {
      adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider({ retry: { maxRetries: 0 } })])],
      config: { knowledge: { ingestion: { pollIntervalMs: 50 } }, network: { allowPrivateNetworks: ['127.0.0.1'] } },
    });
    request = t.request;
  });
  afterAll(async () => {
    await t?.close();
    await wire?.close();
  });

  it('reorders the passages by the model’s ratings, and keeps the order when the answer is not the expected JSON', async () => {
    const { token } = await t.register();
    const model = await request('POST', '/ai/models', { token, body: { name: 'Judge', service: 'openai', conf: { model: 'gpt-judge', baseURL: wire.baseURL, apiKey: 'sk-rerank' } } });
    expect(model.status, model.text).toBe(201);
    const kb = await request('POST', '/knowledge/bases', { token, body: { name: `Rerank ${db.name}`, chunking: { chunkTokens: 30, overlapTokens: 0 } } });
    expect(kb.status, kb.text).toBe(201);
    const text = [
      '# Harbour notes',
      '## Ferries',
      'The harbour ferry leaves the harbour pier every hour for the harbour islands.',
      '## Tides',
      'Harbour tides rise twice a day; the harbour master posts the tide table at the pier.',
      '## Fishing',
      'Fishing in the harbour needs a permit from the harbour office near the pier.',
    ].join('\n\n');
    const sent = await upload(t, token, kb.body.id, [{ name: 'harbour.md', type: 'text/markdown', data: Buffer.from(text) }]);
    expect(sent.status, sent.text).toBe(202);
    expect((await settled(t, token, kb.body.id, sent.body.items[0].id)).status).toBe('ready');

    const retrieve = async (extra: Record<string, unknown> = {}) => {
      const r = await request('POST', `/knowledge/bases/${kb.body.id}/retrieve`, { token, body: { query: 'harbour pier', limit: 3, ...extra } });
      expect(r.status, r.text).toBe(200);
      return r.body.items as Array<{ text: string; score: number }>;
    };
    const fused = await retrieve();
    expect(fused).toHaveLength(3);
    const topics = (items: Array<{ text: string }>) => items.map((item) => /ferry|tides|Fishing/.exec(item.text)?.[0]);
    const before = topics(fused);
    expect(new Set(before)).toEqual(new Set(['ferry', 'tides', 'Fishing']));

    // The judge rates the fused order's passages 1, 5, 9: the order turns around.
    wire.reset();
    wire.enqueue({ text: ['{"scores": [1, ', '5, 9]}'] });
    const reranked = await retrieve({ rerank: { modelId: model.body.id } });
    expect(topics(reranked)).toEqual([...before].reverse());
    expect(reranked.map((item) => item.score)).toEqual([0.9, 0.5, 0.1]);
    // The model was asked once, with the query and the passages numbered in the fused order.
    expect(wire.chatRequests).toHaveLength(1);
    const prompt = JSON.stringify(wire.chatRequests[0]!.body.messages);
    expect(prompt).toContain('Query: harbour pier');
    for (const [index, item] of fused.entries()) expect(prompt).toContain(`[${index + 1}] ${item.text.slice(0, 40)}`.replace(/\n/g, '\\n'));

    // Only the first `candidates` are judged; the rest keep their place after them.
    wire.enqueue({ text: ['{"scores": [2, 8]}'] });
    const two = await retrieve({ rerank: { modelId: model.body.id, candidates: 2 } });
    expect(topics(two)).toEqual([before[1], before[0], before[2]]);

    // An answer that is not the expected JSON leaves the fused order.
    wire.enqueue({ text: ['I would rather not say.'] });
    expect(topics(await retrieve({ rerank: { modelId: model.body.id } }))).toEqual(before);

    // A model the user may not use is refused before any call.
    const other = await t.register();
    const otherKb = await request('POST', '/knowledge/bases', { token: other.token, body: { name: 'Other' } });
    const refused = await request('POST', `/knowledge/bases/${otherKb.body.id}/retrieve`, { token: other.token, body: { query: 'harbour', rerank: { modelId: model.body.id } } });
    expect(refused.status).toBe(404);
    expect(wire.chatRequests).toHaveLength(3);
  });
});
