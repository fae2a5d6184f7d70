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

    it('uses an updated model’s new key and conf from the next call, changed through the API or straight in the database, and a deleted model no longer embeds', async () => {
      const embedCalls = () => wire.requests.filter((request) => request.path.endsWith('/embeddings'));
      const search = () => t.request('POST', '/tool/vdb/Embedded/vector', { token, body: { content: 'alpha', query: { limit: 1 } } });
      wire.reset();
      expect((await search()).status).toBe(200);
      expect(embedCalls().at(-1)!.headers.authorization).toBe(`Bearer ${apiKey}`);
      // A new key and embedding model through the API: the very next call sends them (this wire server refuses the key: 422).
      const conf = { model: 'wire-chat', embeddingModel: 'wire-embed', baseURL: wire.baseURL, apiKey };
      expect((await t.request('PUT', `/ai/models/${modelId}`, { token, body: { name: 'Embeddings', service: 'openai', conf: { ...conf, apiKey: 'sk-rotated', embeddingModel: 'wire-embed-2' } } })).status).toBe(200);
      const refused = await search();
      expect(refused.status).toBe(422);
      expect(refused.body.error).toBe('vdb_embedding_failed');
      expect(embedCalls().at(-1)!.headers.authorization).toBe('Bearer sk-rotated');
      expect(embedCalls().at(-1)!.body.model).toBe('wire-embed-2');
      // Back to the key the server takes.
      expect((await t.request('PUT', `/ai/models/${modelId}`, { token, body: { name: 'Embeddings', service: 'openai', conf } })).status).toBe(200);
      expect((await search()).status).toBe(200);
      expect(embedCalls().at(-1)!.body.model).toBe('wire-embed');
      // Changed straight in the database (as another process, or an operator, would): used at once too.
      const connection = t.kernel.fork().getConnection();
      const [row] = (await connection.execute('SELECT conf FROM ai_models WHERE id = ?', [modelId], 'all')) as Array<{ conf: string | Record<string, unknown> }>;
      const stored = typeof row!.conf === 'string' ? (JSON.parse(row!.conf) as Record<string, unknown>) : row!.conf;
      await connection.execute('UPDATE ai_models SET conf = ? WHERE id = ?', [JSON.stringify({ ...stored, embeddingModel: 'wire-embed-3' }), modelId]);
      expect((await search()).status).toBe(200);
      expect(embedCalls().at(-1)!.body.model).toBe('wire-embed-3');
      // Deleted: the next call fails without reaching the provider.
      expect((await t.request('DELETE', `/ai/models/${modelId}`, { token })).status).toBe(204);
      const before = embedCalls().length;
      const gone = await search();
      expect(gone.status).toBe(422);
      expect(gone.body.error).toBe('vdb_embedding_failed');
      expect(embedCalls()).toHaveLength(before);
    });
  });
});
