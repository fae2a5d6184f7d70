import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, CreditService, provide, TeamService, type AiProvider } from '@trellis/core';
import { AnthropicProvider } from '@trellis/ai-anthropic';
import { DifyProvider } from '@trellis/ai-dify';
import { GeminiProvider } from '@trellis/ai-gemini';
import { OpenAiProvider } from '@trellis/ai-openai';
import { AnthropicWireServer, DifyWireServer, GeminiWireServer, OpenAiWireServer, startTestHost, testDatabases, transports, type AiWireServer, type TestHost } from '@trellis/test-support';
import { startWeatherServer, UserSocket } from './support/ai-clients.js';

interface AdapterCase {
  name: string;
  service: string;
  provider: () => AiProvider<any>;
  wire: (apiKey: string) => Promise<AiWireServer & { baseURL: string }>;
  conf: (wire: { baseURL: string }, apiKey: string) => Record<string, unknown>;
}

// The real adapters (their SDKs end to end) against local servers that speak each vendor's wire format.
const adapters: AdapterCase[] = [
  {
    name: 'openai',
    service: 'openai',
    provider: () => new OpenAiProvider(),
    wire: (apiKey) => new OpenAiWireServer({ apiKey }).start(),
    conf: (wire, apiKey) => ({ model: 'gpt-test', baseURL: wire.baseURL, apiKey }),
  },
  {
    name: 'anthropic',
    service: 'anthropic',
    provider: () => new AnthropicProvider(),
    wire: (apiKey) => new AnthropicWireServer({ apiKey }).start(),
    conf: (wire, apiKey) => ({ model: 'claude-test', baseURL: wire.baseURL, apiKey }),
  },
  {
    name: 'gemini',
    service: 'gemini',
    provider: () => new GeminiProvider(),
    wire: (apiKey) => new GeminiWireServer({ apiKey }).start(),
    conf: (wire, apiKey) => ({ model: 'gemini-test', baseURL: wire.baseURL, apiKey }),
  },
  {
    name: 'dify',
    service: 'dify',
    provider: () => new DifyProvider(),
    wire: (apiKey) => new DifyWireServer({ apiKey }).start(),
    conf: (wire, apiKey) => ({ baseURL: wire.baseURL, apiKey, toolsInput: 'tools' }),
  },
];

describe.each(testDatabases())('conversation turns through the real adapters on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    describe.each(adapters)('$name', (adapter) => {
      const apiKey = `sk-${adapter.name}-wire-key`;
      let t: TestHost;
      let wire: AiWireServer & { baseURL: string };
      let weather: Awaited<ReturnType<typeof startWeatherServer>>;

      beforeAll(async () => {
        wire = await adapter.wire(apiKey);
        weather = await startWeatherServer();
        t = await startTestHost(db, transport, {
          adapters: [provide(aiProvidersServiceIdentifier, [adapter.provider()])],
          config: { network: { allowPrivateNetworks: ['127.0.0.1'] }, ai: { pricing: { default: { input: 1, output: 1 }, models: { [adapter.service]: { input: 10, output: 20 } }, reserveInputTokens: 1000, reserveOutputTokens: 500 } } },
        });
      });
      afterAll(async () => {
        await t?.close();
        await wire?.close();
        await weather?.close();
      });

      it('streams a turn with a tool call and tool_auto over a ws client, and settles credits from the reported usage', async () => {
        const user = await t.register();
        const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: adapter.name, service: adapter.service, conf: adapter.conf(wire, apiKey) } });
        expect(model.status).toBe(201);
        expect(model.body.conf.apiKey).toBe('********');
        const tool = await t.request('POST', '/ai/tools', {
          token: user.token,
          body: {
            name: 'weather',
            actions: [{ name: 'forecast', type: 'http', conf: { url: `${weather.url}/weather?city={{city}}`, response: { path: 'data' }, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
          },
        });
        const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id, toolIds: [tool.body.id] } } });
        const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
        const convId = conv.body.id;

        wire.reset();
        wire.enqueue(
          { toolCalls: [{ id: 'call_w1', name: 'weather__forecast', arguments: '{"city":"Paris"}' }], usage: { inputTokens: 120, outputTokens: 30 } },
          { text: ['It is ', 'sunny ', 'in Paris.'], usage: { inputTokens: 200, outputTokens: 12 } },
        );
        const em = t.kernel.fork();
        const team = (await t.kernel.get(TeamService).firstTeam(em, user.userId))!.team.id;
        const before = (await t.kernel.get(CreditService).balance(em, team)).balance;

        const socket = await UserSocket.open(t.wsUrl, user.token);
        try {
          const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Weather in Paris?', attrs: { stream: true, tool_auto: true } } });
          expect(r.status).toBe(202);
          const end = await socket.until((n) => n.type === 'end' && n.content.status === 'completed');
          expect(socket.notes.filter((n) => n.type !== 'delta').map((n) => n.type)).toEqual(['message-start', 'tool-call', 'tool-result', 'message-start', 'end']);
          const call = socket.notes.find((n) => n.type === 'tool-call')!.content;
          expect(call).toMatchObject({ toolName: 'weather__forecast', input: { city: 'Paris' } });
          if (adapter.name !== 'gemini') expect(call.toolCallId).toBe('call_w1'); // Gemini's wire format has no call ids
          const result = socket.notes.find((n) => n.type === 'tool-result')!.content;
          expect(result).toMatchObject({ toolCallId: call.toolCallId, result: { city: 'Paris', sky: 'sunny' } });
          expect(socket.notes.filter((n) => n.type === 'delta' && n.msgId === end.msgId).map((n) => n.content).join('')).toBe('It is sunny in Paris.');
        } finally {
          socket.close();
        }

        // The key reached the vendor's server decrypted, and the tool result went back in the second request.
        expect(wire.chatRequests).toHaveLength(2);
        expect(JSON.stringify(wire.chatRequests[0]!.headers) + wire.chatRequests[0]!.query.toString()).toContain(apiKey);
        expect(wire.chatRequests[1]!.rawBody).toContain('sunny');

        // 120 in and 30 out at 10 and 20 per 1,000: ceil(1.2 + 0.6) = 2; then ceil(2 + 0.24) = 3.
        const messages = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
        expect(messages.body.items.map((m: { role: string; usage: { credits: number } | null }) => [m.role, m.usage?.credits ?? null])).toEqual([
          ['user', null],
          ['assistant', 2],
          ['tool', null],
          ['assistant', 3],
        ]);
        const after = (await t.kernel.get(CreditService).balance(t.kernel.fork(), team)).balance;
        expect(before.grantCredits + before.purchaseCredits - (after.grantCredits + after.purchaseCredits)).toBe(5);
      });

      /** A conversation of a new user whose bot answers with this adapter. */
      const conversation = async () => {
        const user = await t.register();
        const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: adapter.name, service: adapter.service, conf: adapter.conf(wire, apiKey) } });
        const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
        const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
        return { user, convId: conv.body.id as string };
      };

      it('keeps the text the members were shown when the stream is cut, marked failed, and says it was cut', async () => {
        const { user, convId } = await conversation();
        wire.reset();
        wire.enqueue({ text: ['Once ', 'upon ', 'a ', 'time ', 'there ', 'was'], cutAfter: 3 });
        const socket = await UserSocket.open(t.wsUrl, user.token);
        try {
          const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'Tell me a story', attrs: { stream: true } } });
          expect(r.status).toBe(202);
          const failed = await socket.until((n) => n.type === 'error');
          const shown = socket.notes.filter((n) => n.type === 'delta' && n.msgId === failed.msgId).map((n) => n.content).join('');
          expect(shown.length).toBeGreaterThan(0);
          expect(failed.content.error).toBe('ai_unavailable');
          expect(failed.content.message).toMatch(/cut after it started/);
          expect(failed.content.message).not.toMatch(/could not be reached|\[object Object\]/);
          const messages = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
          const stored = messages.body.items.find((m: { id: string }) => m.id === failed.msgId);
          expect(stored).toMatchObject({ role: 'assistant', status: 'error', content: shown, error: { error: 'ai_unavailable' } });
        } finally {
          socket.close();
        }
      });

      it('tells the members of a streamed turn how long a rate limit lasts (retry_after)', async () => {
        const { user, convId } = await conversation();
        wire.reset();
        wire.enqueue({ error: { status: 429, message: 'Too many requests', headers: { 'retry-after': '120' } } });
        const socket = await UserSocket.open(t.wsUrl, user.token);
        try {
          const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'hi', attrs: { stream: true } } });
          expect(r.status).toBe(202);
          const failed = await socket.until((n) => n.type === 'error');
          expect(failed.content).toMatchObject({ error: 'ai_rate_limited', retry_after: 120 });
          const messages = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
          expect(messages.body.items.find((m: { id: string }) => m.id === failed.msgId).error).toMatchObject({ error: 'ai_rate_limited', retry_after: 120 });
        } finally {
          socket.close();
        }
      });

      it('maps the vendor refusing the key to ai_auth_failed', async () => {
        const user = await t.register();
        const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'bad', service: adapter.service, conf: adapter.conf(wire, 'sk-wrong') } });
        const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
        const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
        const r = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hi' } });
        expect(r.status).toBe(502);
        expect(r.body.error).toBe('ai_auth_failed');
      });
    });
  });
});
