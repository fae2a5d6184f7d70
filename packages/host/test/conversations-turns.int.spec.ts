import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, ConversationEventBatch, CreditService, hooksServiceIdentifier, provide, pubSubServiceIdentifier, TeamService, TurnLog, type TrellisHooks } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { OpenAiWireServer, sharedDatabase, startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { eventually } from './documents.fixtures.js';
import { startWeatherServer, UserSocket } from './support/ai-clients.js';

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface TurnEvent {
  seq: number;
  type: string;
  turnId: string;
  msgId: string;
  convId: string;
  content: any;
}

const eventTypes = ['message-start', 'delta', 'tool-call', 'tool-result', 'end', 'error', 'turn-end'];

/**
 * Follows `GET /conversation/{id}/events` with the `eventsource` client until `turn-end`, or
 * until `stopAfter` events (then it drops the connection). `status` is what the server answered.
 */
function follow(url: string, token: string, options: { lastEventId?: number; stopAfter?: number; onEvent?: (event: TurnEvent) => void } = {}): Promise<{ events: TurnEvent[]; status: number; contentType: string | null }> {
  return new Promise((resolve, reject) => {
    const events: TurnEvent[] = [];
    let status = 0;
    let contentType: string | null = null;
    const source = new EventSource(url, {
      fetch: async (input, init) => {
        const headers: Record<string, string> = { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` };
        if (options.lastEventId !== undefined) headers['last-event-id'] = String(options.lastEventId);
        const response = await fetch(input, { ...init, headers });
        status = response.status;
        contentType = response.headers.get('content-type');
        return response;
      },
    });
    const done = () => {
      source.close();
      resolve({ events, status, contentType });
    };
    for (const type of eventTypes) {
      source.addEventListener(type, (message) => {
        // EventSource's own connection errors are `error` events without data.
        if (typeof message.data !== 'string') return;
        const event = JSON.parse(message.data) as TurnEvent;
        expect(Number(message.lastEventId)).toBe(event.seq);
        events.push(event);
        options.onEvent?.(event);
        if (type === 'turn-end' || (options.stopAfter !== undefined && events.length >= options.stopAfter)) done();
      });
    }
    source.onerror = (error) => {
      source.close();
      if (status && status !== 200) resolve({ events, status, contentType });
      else reject(new Error(`EventSource failed: ${String((error as { message?: string }).message ?? error)}`));
    };
  });
}

// Two host processes' worth of kernels on one database and one Redis: one turn at a time per
// conversation across them, a turn followed from either after any gap, a stop sent to the other.
// The databases' suites run side by side (each has its own hosts, wire server and Redis channels:
// the reader's 30 s away overlap); within one, the tests run in turn (they share the wire server).
describe.concurrent.each(testDatabases())('conversation turns across hosts on $name', (base) => {
  const db = sharedDatabase(base);
  const channelPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
  let a: TestHost;
  let b: TestHost;
  let wire: OpenAiWireServer;
  let requestA: TestHost['request'];
  let requestB: TestHost['request'];

  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: 'sk-turns' }).start();
    const start = () =>
      startTestHost(db, 'node', {
        adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: redisUrl, channelPrefix })), provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
        config: {
          network: { allowPrivateNetworks: ['127.0.0.1'] },
          ai: { pricing: { default: { input: 10, output: 20 }, reserveInputTokens: 1000, reserveOutputTokens: 1000 } },
        },
      });
    a = await start();
    b = await start();
    requestA = a.request;
    requestB = b.request;
  });
  afterAll(async () => {
    await wire?.close();
    await b?.close();
    await a?.close();
    await db.cleanup();
  });

  async function conversation() {
    const user = await a.register();
    const model = await requestA('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-turns' } } });
    const bot = await requestA('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const conv = await requestA('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
    return { user, convId: conv.body.id as string };
  }

  it.sequential('two sends to one conversation at the same moment, one per host, give one turn and one 409', async () => {
    const { user, convId } = await conversation();
    wire.reset();
    wire.enqueue({ text: ['One ', 'turn ', 'only.'], holdAfter: 1 }, { text: ['Never.'] });
    const send = (request: TestHost['request'], content: string) => request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content, attrs: { stream: true } } });
    const answers = await Promise.all([send(requestA, 'from A'), send(requestB, 'from B')]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
    const refused = answers.find((r) => r.status === 409)!;
    expect(refused.body.code ?? refused.body.error).toBe('turn_in_progress');
    const accepted = answers.find((r) => r.status === 202)!;
    expect(accepted.body).toMatchObject({ status: 'streaming', turnId: expect.any(String), after: 0 });
    await wire.held();
    // Only the winner's message was stored; the refused send left nothing behind.
    const messages = await requestB('GET', `/conversation/${convId}/messages`, { token: user.token });
    expect(messages.body.items.filter((m: { role: string }) => m.role === 'user')).toHaveLength(1);
    expect(wire.chatRequests).toHaveLength(1);
    // Stopped from the other host, the conversation takes a new turn.
    const stopped = await requestB('POST', `/conversation/${convId}/turn/stop`, { token: user.token });
    expect(stopped.body).toEqual({ convId, turnId: accepted.body.turnId, status: 'stopped' });
    const again = await requestB('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'again' } });
    expect(again.status).toBe(200);
    expect(again.body.messages[1]).toMatchObject({ content: 'Never.', status: 'completed' });
  });

  it.sequential('a reader that drops a 2,000-delta turn for 30 s and reconnects to the other host gets every delta exactly once', { timeout: 240_000 }, async () => {
    const { user, convId } = await conversation();
    const deltas = Array.from({ length: 2000 }, (_, i) => `d${i} `);
    wire.reset();
    // The provider pauses before the last 100 deltas until the reader is back and reading: the turn
    // is still going when the reader returns however slow the machine (once, paced by time alone,
    // it had ended by then), and no longer than it needs to be.
    let resume!: () => void;
    wire.enqueue({ text: deltas, delayMs: 5, pauseAfter: 1900, resume: new Promise<void>((resolve) => (resume = resolve)) });
    // A member's socket on host B all along: the fan-out reaches it once per delta. It pings (every
    // 30 s, as clients should): the test outlasts the 90 s of silence after which the server closes
    // a socket (once, on SQLite at load 16, it got nothing after the pause for that reason alone).
    const socket = await UserSocket.open(b.wsUrl, user.token);
    try {
      const started = await requestA('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Count.', attrs: { stream: true } } });
      expect(started.status).toBe(202);
      const msgId = started.body.messages[1].id;
      const first = await follow(`${a.url}/conversation/${convId}/events?after=${started.body.after}`, user.token, { stopAfter: 150 });
      expect(first.contentType).toContain('text/event-stream');
      // Away for 30 s, longer than any buffer holds, and until 1,750 deltas went by meanwhile.
      const seen = first.events.at(-1)!.seq;
      await Promise.all([new Promise((resolve) => setTimeout(resolve, 30_000)), wire.held()]);
      expect((await requestB('GET', `/conversation/${convId}/messages`, { token: user.token })).body.items.find((m: { id: string }) => m.id === msgId).status).not.toBe('completed');
      // Back on the other host: the provider goes on once the reader has its first missed event.
      const rest = await follow(`${b.url}/conversation/${convId}/events`, user.token, { lastEventId: seen, onEvent: () => resume() });
      const all = [...first.events, ...rest.events];
      expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => started.body.after + 1 + i));
      expect(all.map((e) => e.type).filter((t) => t !== 'delta')).toEqual(['message-start', 'end', 'turn-end']);
      expect(all.filter((e) => e.type === 'delta').map((e) => e.content)).toEqual(deltas);
      expect(all.at(-1)!.content).toEqual({ status: 'completed' });
      // The stored message is what the readers were shown.
      const stored = (await requestB('GET', `/conversation/${convId}/messages`, { token: user.token })).body.items.find((m: { id: string }) => m.id === msgId);
      expect(stored).toMatchObject({ status: 'completed', content: deltas.join('') });
      // The socket got each delta once, in order.
      await socket.until((n) => n.type === 'end' && n.msgId === msgId);
      expect(socket.notes.filter((n) => n.type === 'delta' && n.msgId === msgId).map((n) => n.content)).toEqual(deltas);
      // The reader that has it all is told so.
      const nothing = await follow(`${a.url}/conversation/${convId}/events`, user.token, { lastEventId: all.at(-1)!.seq });
      expect(nothing.status).toBe(204);
    } finally {
      resume();
      socket.close();
    }
  });

  it.sequential('a reader that joins a busy turn is sent its events while the turn goes on, not once it goes quiet', { timeout: 120_000 }, async () => {
    const { user, convId } = await conversation();
    const deltas = Array.from({ length: 1100 }, (_, i) => `d${i} `);
    wire.reset();
    // The provider streams 1,000 deltas (seconds of writes), then waits for the reader's first event.
    let resume!: () => void;
    wire.enqueue({ text: deltas, delayMs: 5, pauseAfter: 1000, resume: new Promise<void>((resolve) => (resume = resolve)) });
    let paused = false;
    void wire.held().then(() => (paused = true));
    try {
      const started = await requestA('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Count.', attrs: { stream: true } } });
      let pausedAtFirst: boolean | undefined;
      // On the host writing the turn. Before the fix, on SQLite, the reader chased the log (stored
      // as fast as it read it, a few events a query) and sent nothing until the provider paused.
      const { events } = await follow(`${a.url}/conversation/${convId}/events?after=${started.body.after}`, user.token, {
        onEvent: () => {
          pausedAtFirst ??= paused;
          resume();
        },
      });
      expect(pausedAtFirst).toBe(false);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => started.body.after + 1 + i));
      expect(events.filter((e) => e.type === 'delta').map((e) => e.content)).toEqual(deltas);
    } finally {
      resume();
    }
  });

  it.sequential('a cut provider stream leaves the stored message equal to what the log showed, marked error', async () => {
    const { user, convId } = await conversation();
    wire.reset();
    wire.enqueue({ text: ['One ', 'two ', 'three ', 'four.'], cutAfter: 3 });
    const started = await requestA('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Count', attrs: { stream: true } } });
    const { events } = await follow(`${b.url}/conversation/${convId}/events?after=${started.body.after}`, user.token);
    const shown = events.filter((e) => e.type === 'delta').map((e) => e.content).join('');
    expect(shown).toBe('One two three ');
    expect(events.slice(-2).map((e) => [e.type, e.content.error ?? e.content.status])).toEqual([
      ['error', 'ai_unavailable'],
      ['turn-end', 'failed'],
    ]);
    const stored = (await requestB('GET', `/conversation/${convId}/messages`, { token: user.token })).body.items.find((m: { id: string }) => m.id === started.body.messages[1].id);
    expect(stored).toMatchObject({ status: 'error', content: shown, error: { error: 'ai_unavailable' } });
  });

  it.sequential('a turn stopped from the other host keeps its partial text and releases the unused credits', async () => {
    const { user, convId } = await conversation();
    const team = (await a.kernel.get(TeamService).firstTeam(a.kernel.fork(), user.userId))!.team.id;
    const total = async () => {
      const { balance } = await a.kernel.get(CreditService).balance(a.kernel.fork(), team);
      return balance.grantCredits + balance.purchaseCredits;
    };
    const before = await total();
    const finished: TrellisHooks['conversation.turnFinished'][] = [];
    const offs = [a, b].map((host) => host.kernel.get(hooksServiceIdentifier).on('conversation.turnFinished', (payload) => void finished.push(payload)));
    wire.reset();
    wire.enqueue({ text: ['It ', 'was ', 'a ', 'dark ', 'night.'], holdAfter: 3 });
    const socket = await UserSocket.open(a.wsUrl, user.token);
    try {
      const started = await requestA('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'A story?', attrs: { stream: true } } });
      const msgId = started.body.messages[1].id;
      await wire.held();
      await socket.until(() => socket.notes.filter((n) => n.type === 'delta').length === 3);
      const reader = follow(`${a.url}/conversation/${convId}/events?after=${started.body.after}`, user.token);
      const stopped = await requestB('POST', `/conversation/${convId}/turn/stop`, { token: user.token });
      expect(stopped.status).toBe(200);
      expect(stopped.body.status).toBe('stopped');
      const end = await socket.until((n) => n.type === 'end' && n.msgId === msgId);
      expect(end.content.status).toBe('stopped');
      const { events } = await reader;
      expect(events.filter((e) => e.type === 'delta').map((e) => e.content).join('')).toBe('It was a ');
      expect(events.at(-1)).toMatchObject({ type: 'turn-end', content: { status: 'stopped' } });
      const stored = (await requestB('GET', `/conversation/${convId}/messages`, { token: user.token })).body.items.find((m: { id: string }) => m.id === msgId);
      expect(stored).toMatchObject({ status: 'stopped', content: 'It was a ', error: null });
      // The provider's stream was aborted.
      await eventually(async () => wire.activeStreams, (open) => open === 0, 'the provider stream to close');
      // Charged for what was sent and written (about 2 input and 3 output tokens: 1 credit), not the reservation (30).
      const charged = before - (await total());
      expect(charged).toBeGreaterThan(0);
      expect(charged).toBeLessThan(5);
      // Nothing more to stop.
      const again = await requestA('POST', `/conversation/${convId}/turn/stop`, { token: user.token });
      expect(again.status).toBe(409);
      // The process that ran the turn fired the hook, once.
      expect(finished).toEqual([{ conversationId: convId, messageId: msgId, userId: user.userId, teamId: team, status: 'stopped', usage: null }]);
    } finally {
      socket.close();
      for (const off of offs) off();
    }
  });
});

// One host per transport with the in-process PubSub: a tool_auto turn followed as SSE, with the
// keep-alive comments of a quiet turn.
describe.each(testDatabases())('conversation turn events on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let wire: OpenAiWireServer;
    let weather: Awaited<ReturnType<typeof startWeatherServer>>;
    let request: TestHost['request'];
    beforeAll(async () => {
      wire = await new OpenAiWireServer({ apiKey: 'sk-events' }).start();
      weather = await startWeatherServer();
      t = await startTestHost(db, transport, {
        adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
        config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, server: { streamKeepAliveMs: 100 } },
      });
      request = t.request;
    });
    afterAll(async () => {
      await t?.close();
      await wire?.close();
      await weather?.close();
    });

    it('a tool_auto turn reads as its events, in order, with keep-alive comments while it is quiet', async () => {
      const user = await t.register();
      const model = await request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-events' } } });
      const tool = await request('POST', '/ai/tools', {
        token: user.token,
        body: { name: 'weather', actions: [{ name: 'forecast', type: 'http', conf: { url: `${weather.url}/weather?city={{city}}`, response: { path: 'data' }, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] },
      });
      const bot = await request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id, toolIds: [tool.body.id] } } });
      const conv = await request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
      const convId = conv.body.id;
      expect((await request('GET', `/conversation/${convId}/events`, { token: user.token })).status).toBe(204);
      wire.reset();
      wire.enqueue({ toolCalls: [{ id: 'call_1', name: 'weather__forecast', arguments: '{"city":"Paris"}' }] }, { text: ['Sunny ', 'in ', 'Paris.'], delayMs: 150 });
      const started = await request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Weather?', attrs: { stream: true, tool_auto: true } } });
      expect(started.status).toBe(202);
      // Read as raw text: the keep-alive comments are not events.
      const response = await fetch(`${t.url}/conversation/${convId}/events?after=${started.body.after}`, { headers: { authorization: `Bearer ${user.token}` } });
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const text = await response.text();
      expect(text).toContain(': keep-alive');
      const frames = text.split('\n\n').filter((f) => f.includes('data: '));
      const events = frames.map((f) => JSON.parse(f.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as TurnEvent);
      expect(events.map((e) => e.type)).toEqual(['message-start', 'tool-call', 'tool-result', 'message-start', 'delta', 'delta', 'delta', 'end', 'turn-end']);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => started.body.after + 1 + i));
      expect(events.find((e) => e.type === 'tool-result')!.content).toMatchObject({ toolCallId: 'call_1', result: { city: 'Paris', sky: 'sunny' } });
      expect(events.at(-1)!.content).toEqual({ status: 'completed' });
      // Replayed later from the log, the same events.
      const replay = await follow(`${t.url}/conversation/${convId}/events?after=${started.body.after}`, user.token);
      expect(replay.events).toEqual(events);
    });

    it('the log is pruned past its retention but for each conversation\'s newest batch; a reader from before gets what is kept, and numbering goes on', async () => {
      const user = await t.register();
      const model = await request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-events' } } });
      const bot = await request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
      const convId = (await request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } })).body.id as string;
      const turn = async (words: string[]) => {
        wire.reset();
        wire.enqueue({ text: words });
        const started = await request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Go', attrs: { stream: true } } });
        expect(started.status).toBe(202);
        return (await follow(`${t.url}/conversation/${convId}/events?after=${started.body.after}`, user.token)).events;
      };
      const first = await turn(['a ', 'b']);
      const second = await turn(['c ', 'd']);
      const em = t.kernel.fork();
      const batches = () => em.fork().find(ConversationEventBatch, { conversation: convId }, { orderBy: { seq: 'asc' } });
      const before = await batches();
      expect(before.length).toBeGreaterThan(1);
      // Everything is older than a cutoff an hour ahead: all but the newest batch go.
      const removed = await t.kernel.get(TurnLog).prune(new Date(Date.now() + 3_600_000));
      expect(removed).toBeGreaterThanOrEqual(before.length - 1);
      const after = await batches();
      expect(after.map((b) => b.lastSeq)).toEqual([before.at(-1)!.lastSeq]);
      // A reader from the start gets the kept events (the end of the second turn), in order.
      const kept = await follow(`${t.url}/conversation/${convId}/events?after=0`, user.token);
      expect(kept.events.map((e) => e.seq)).toEqual(after[0]!.events.map((e) => e.seq));
      expect(kept.events.at(-1)).toEqual(second.at(-1));
      // The next turn numbers after the last event, as if nothing had gone.
      const third = await turn(['e']);
      expect(third[0]!.seq).toBe(second.at(-1)!.seq + 1);
      expect(first.at(-1)!.seq).toBeLessThan(second[0]!.seq);
    });
  });
});
