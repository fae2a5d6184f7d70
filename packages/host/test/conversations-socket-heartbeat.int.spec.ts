import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide, pubSubServiceIdentifier } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { OpenAiWireServer, sharedDatabase, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { UserSocket } from './support/ai-clients.js';

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

// A member's socket on another host than the turn, through a quiet stretch of the turn longer than
// `realtime.heartbeatTimeoutMs` (2 s here, 90 s by default). A socket that sends nothing is closed
// with 4408 and gets nothing after it (what conversations-turns.int.spec.ts once took for lost
// notifications: its socket sent nothing for over 90 s); one that pings gets the whole turn.
describe.concurrent.each(testDatabases())('a member socket through a quiet turn on $name', (base) => {
  const db = sharedDatabase(base);
  const channelPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
  let a: TestHost;
  let b: TestHost;
  let wire: OpenAiWireServer;

  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-quiet' }).start();
    const start = (realtime: Record<string, unknown>) =>
      startTestHost(db, 'node', {
        adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: redisUrl, channelPrefix })), provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
        config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, realtime },
      });
    a = await start({});
    b = await start({ heartbeatTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    await wire?.close();
    await b?.close();
    await a?.close();
    await db.cleanup();
  });

  it('a socket that pings gets every delta and the end; a silent one is closed with 4408 during the pause and gets nothing after it', async () => {
    const user = await a.register();
    const model = await a.request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-quiet' } } });
    const bot = await a.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const convId = (await a.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } })).body.id as string;
    const deltas = Array.from({ length: 20 }, (_, i) => `d${i} `);
    let resume!: () => void;
    wire.reset();
    wire.enqueue({ text: deltas, pauseAfter: 10, resume: new Promise<void>((resolve) => (resume = resolve)) });
    const silent = await UserSocket.open(b.wsUrl, user.token, undefined, { pingMs: 0 });
    const member = await UserSocket.open(b.wsUrl, user.token, undefined, { pingMs: 200 });
    try {
      const started = await a.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Count.', attrs: { stream: true } } });
      expect(started.status).toBe(202);
      const msgId = started.body.messages[1].id;
      await wire.held();
      const ofTurn = (socket: UserSocket) => socket.notes.filter((n) => n.type === 'delta' && n.msgId === msgId).map((n) => n.content);
      await member.until(() => ofTurn(member).length === 10);
      // The provider goes on only once the silent socket was closed: the pause outlasts the limit.
      expect(await silent.whenClosed).toEqual({ code: 4408, reason: 'heartbeat_timeout' });
      resume();
      const end = await member.until((n) => n.type === 'end' && n.msgId === msgId);
      expect(end.content.status).toBe('completed');
      expect(ofTurn(member)).toEqual(deltas);
      expect(member.closed).toBeNull();
      // The silent socket had what came before its close, nothing after.
      expect(ofTurn(silent)).toEqual(deltas.slice(0, ofTurn(silent).length));
      expect(silent.notes.some((n) => n.type === 'end')).toBe(false);
    } finally {
      resume();
      silent.close();
      member.close();
    }
  });
});
