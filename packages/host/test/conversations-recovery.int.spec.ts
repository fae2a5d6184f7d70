import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, sharedDatabase, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { eventually } from './documents.fixtures.js';
import { UserSocket } from './support/ai-clients.js';

// Two hosts on one database: A writes a streamed turn and stops answering for good (its database
// connection is gone, as when its process is killed); B, started afterwards, finds the turn by its
// stale lease and closes it with the text A had stored.
describe.each(testDatabases())('a conversation turn cut by a crash on $name', (base) => {
  const db = sharedDatabase(base);
  let a: TestHost;
  let b: TestHost | undefined;
  let wire: OpenAiWireServer;
  const config = (staleAfterMs: number) => ({ ai: { turns: { heartbeatMs: 100, staleAfterMs } }, network: { allowPrivateNetworks: ['127.0.0.1'] } });

  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-recovery' }).start();
    // A's database connection is cut in the test (its crash): its stop waits for nothing longer than 1 s.
    a = await startTestHost(db, 'node', { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])], config: { ...config(3_600_000), server: { shutdownTimeoutMs: 1_000 } } });
  });
  afterAll(async () => {
    await wire?.close();
    await b?.close();
    await a?.close().catch(() => undefined);
    await db.cleanup();
  });

  it('stores the text written so far while streaming, and a later host marks the turn failed with that text', async () => {
    const user = await a.register();
    const model = await a.request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-recovery' } } });
    const bot = await a.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const conv = await a.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
    wire.enqueue({ text: ['It ', 'was ', 'a ', 'dark ', 'night.'], holdAfter: 3 });
    const socket = await UserSocket.open(a.wsUrl, user.token);
    let msgId: string;
    let shown: string;
    try {
      const r = await a.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'A story?', attrs: { stream: true } } });
      expect(r.status).toBe(202);
      msgId = r.body.messages[1].id;
      await wire.held();
      await socket.until((n) => n.type === 'delta' && n.msgId === msgId && socket.notes.filter((x) => x.type === 'delta').length === 3);
      shown = socket.notes.filter((n) => n.type === 'delta' && n.msgId === msgId).map((n) => n.content).join('');
      expect(shown).toBe('It was a ');
      // The lease carries the text to the database while the stream is still open.
      const streaming = await eventually(
        () => a.request('GET', `/conversation/${conv.body.id}/messages`, { token: user.token }),
        (res) => res.body.items.find((m: { id: string }) => m.id === msgId)?.content === shown,
      );
      expect(streaming.body.items.find((m: { id: string }) => m.id === msgId).status).toBe('streaming');
    } finally {
      socket.close();
    }

    // The crash: A can no longer write anything, so nothing of it closes the turn.
    await a.kernel.fork().getConnection().close(true);

    b = await startTestHost(db, 'node', { adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])], config: config(1_000) });
    const login = await b.request('POST', '/auth/login', { body: { email: user.email, password: 'correct horse battery' } });
    const closed = await eventually(
      () => b!.request('GET', `/conversation/${conv.body.id}/messages`, { token: login.body.token }),
      (res) => res.body.items.find((m: { id: string }) => m.id === msgId)?.status === 'error',
    );
    expect(closed.body.items.find((m: { id: string }) => m.id === msgId)).toMatchObject({ status: 'error', content: shown, error: { error: 'ai_turn_interrupted' } });
    // The conversation goes on: a new turn is answered.
    wire.enqueue({ text: ['Again.'] });
    const again = await b.request('POST', `/conversation/${conv.body.id}/messages`, { token: login.body.token, body: { content: 'Once more?' } });
    expect(again.status).toBe(200);
    expect(again.body.messages[1].content).toBe('Again.');
    // It starts a second host inside the test: 5 s when quiet, over 30 s on a loaded machine.
  }, 120_000);
});
