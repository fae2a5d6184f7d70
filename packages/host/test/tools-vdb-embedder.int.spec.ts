import { randomUUID } from 'node:crypto';
import { aiGatewayServiceIdentifier, embedderServiceIdentifier, VdbCollection } from '@trellis/core';
import { OpenAiWireServer, startTestHost, testDatabases, transports, wireEmbedding, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The AI-backed embedder (tools.vdb.embedder): the configured AI model's provider embeds records
// and queries, here @trellis/ai-openai against a local server speaking OpenAI's /embeddings.
describe.each(testDatabases())('vector database with an AI model embedder on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    const apiKey = 'sk-embed-test';
    const modelId = randomUUID();
    let wire: OpenAiWireServer;
    let t: TestHost;
    let token: string;
    beforeAll(async () => {
      wire = await new OpenAiWireServer({ apiKey }).start();
      t = await startTestHost(db, transport, { config: { tools: { vdb: { embedder: { modelId, dimension: 8 } } }, network: { allowPrivateNetworks: ['127.0.0.1'] } } });
      ({ token } = await t.register());
      // An AI model on the wire server; the configuration names it by id, so give it the configured one.
      const model = await t.request('POST', '/ai/models', { token, body: { name: 'Embeddings', service: 'openai', conf: { model: 'wire-chat', embeddingModel: 'wire-embed', baseURL: wire.baseURL, apiKey } } });
      expect(model.status).toBe(201);
      await t.kernel.fork().getConnection().execute('UPDATE ai_models SET id = ? WHERE id = ?', [modelId, model.body.id]);
    });
    afterAll(async () => {
      await t?.close();
      await wire?.close();
    });

    it('embeds through the network guard: a model whose baseURL is a refused address is never reached', async () => {
      // 127.0.0.2 is loopback too, but not in network.allowPrivateNetworks.
      const baseURL = wire.baseURL.replace('127.0.0.1', '127.0.0.2');
      const model = await t.request('POST', '/ai/models', { token, body: { name: 'Refused', service: 'openai', conf: { model: 'wire-chat', baseURL, apiKey } } });
      expect(model.status).toBe(201);
      // The AI module's gateway, whose embed the vector database's embedder calls.
      const gateway = t.kernel.get(aiGatewayServiceIdentifier) as unknown as { embed(input: { modelId: string; texts: string[] }): Promise<unknown> };
      await expect(gateway.embed({ modelId: model.body.id, texts: ['a'] })).rejects.toMatchObject({ code: 'destination_refused', status: 400 });
    });

    it('embeds records and queries through the model and ranks by its vectors', async () => {
      expect(t.kernel.get(embedderServiceIdentifier)).toMatchObject({ name: `ai-${modelId}-8`, dimension: 8 });
      wire.reset();
      const texts = ['alpha beta gamma', 'zzzz zzzz zzzz zzzz', 'a'];
      const ids: string[] = [];
      for (const content of texts) {
        const created = await t.request('POST', '/tool/vdb/Embedded', { token, body: { content, tags: ['t'] } });
        expect(created.status).toBe(201);
        ids.push(created.body.id);
      }
      const embedCalls = wire.requests.filter((request) => request.path.endsWith('/embeddings'));
      expect(embedCalls.map((request) => request.body.input)).toEqual(texts.map((text) => [text]));
      expect(embedCalls[0]!.body.model).toBe('wire-embed');
      expect(embedCalls[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);

      const collection = await t.kernel.fork().findOneOrFail(VdbCollection, { name: 'Embedded' });
      expect(collection).toMatchObject({ embedder: `ai-${modelId}-8`, dimension: 8 });

      // The wire server's vectors are a fixed function of the text: rank with the test's own cosine.
      const cosine = (a: number[], b: number[]) => {
        let dot = 0;
        let na = 0;
        let nb = 0;
        for (let i = 0; i < a.length; i++) {
          dot += a[i]! * b[i]!;
          na += a[i]! ** 2;
          nb += b[i]! ** 2;
        }
        return dot / Math.sqrt(na * nb);
      };
      const query = 'alpha beta gamma';
      const expected = texts.map((text, i) => ({ id: ids[i], score: cosine(wireEmbedding(query), wireEmbedding(text)) })).sort((a, b) => b.score - a.score);
      const found = await t.request('POST', '/tool/vdb/Embedded/vector', { token, body: { content: query, query: { limit: 3 } } });
      expect(found.status).toBe(200);
      expect(found.body.items.map((item: { id: string }) => item.id)).toEqual(expected.map((hit) => hit.id));
      found.body.items.forEach((item: { score: number }, i: number) => expect(item.score).toBeCloseTo(expected[i]!.score, 5));
      const filtered = await t.request('POST', '/tool/vdb/Embedded/vector', { token, body: { content: query, query: { limit: 2, filter: { tags: { $contains: 't' } } } } });
      expect(filtered.body.items).toHaveLength(2);
    });

    it('answers 422 when the model answers another dimension, and stores nothing', async () => {
      wire.enqueue({ embeddings: [[0.1, 0.2, 0.3]] });
      const response = await t.request('POST', '/tool/vdb/Dims', { token, body: { content: 'three dimensions' } });
      expect(response.status).toBe(422);
      expect(response.body.error).toBe('vdb_embedding_failed');
      expect(response.body.message).toMatch(/3 dimensions.*dimension is 8/);
      expect(await t.kernel.fork().count(VdbCollection, { name: 'Dims' })).toBe(0);
    });

    it('answers 422 vdb_embedding_failed when the provider refuses', async () => {
      wire.enqueue({ error: { status: 401, message: 'Incorrect API key provided.' } });
      const response = await t.request('POST', '/tool/vdb/Refused', { token, body: { content: 'refused' } });
      expect(response.status).toBe(422);
      expect(response.body.error).toBe('vdb_embedding_failed');
    });

    it('keeps a collection on the dimension it was created with: another embedder answers 422 vdb_embedder_mismatch', async () => {
      const em = t.kernel.fork();
      // A collection of the same team created earlier with the default hashing embedder (384 dimensions).
      const embedded = await em.findOneOrFail(VdbCollection, { name: 'Embedded' });
      em.create(VdbCollection, { id: randomUUID(), team: embedded.team, name: 'Hashed', embedder: 'hashing-v1-384', dimension: 384, createdAt: new Date(), updatedAt: new Date() });
      await em.flush();
      for (const [method, path, body] of [
        ['POST', '/tool/vdb/Hashed', { content: 'new record' }],
        ['POST', '/tool/vdb/Hashed/vector', { content: 'query' }],
      ] as const) {
        const response = await t.request(method, path, { token, body });
        expect(response.status).toBe(422);
        expect(response.body.error).toBe('vdb_embedder_mismatch');
        expect(response.body.message).toMatch(/384 dimensions.*8\)/);
      }
    });
  });
});
