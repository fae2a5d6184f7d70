import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, CreditService, provide, TeamService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { ScriptedProvider, startWeatherServer, UserSocket } from './support/ai-clients.js';

// Conversations, messages and the bot's turns over real sockets: HTTP with fetch, the user
// WebSocket with `ws`, an http tool action against a local server, credits through billing.
describe.each(testDatabases())('conversations on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let weather: Awaited<ReturnType<typeof startWeatherServer>>;
    const provider = new ScriptedProvider();

    beforeAll(async () => {
      weather = await startWeatherServer();
      t = await startTestHost(db, transport, {
        adapters: [provide(aiProvidersServiceIdentifier, [provider])],
        config: {
          ai: {
            tools: { allowPrivateNetworks: true },
            toolAutoMaxSteps: 3,
            pricing: { default: { input: 2, output: 4 }, models: { 'scripted/pricey': { input: 1000, output: 1000 } }, reserveInputTokens: 4000, reserveOutputTokens: 1000 },
          },
        },
      });
    });
    afterAll(async () => {
      await t?.close();
      await weather?.close();
    });

    /** A user with a model, a weather tool and a bot that uses both. */
    async function setup(options: { tools?: boolean; model?: string; service?: string } = {}) {
      const user = await t.register();
      const model = await t.request('POST', '/ai/models', {
        token: user.token,
        body: { name: 'Scripted', service: options.service ?? 'scripted', conf: { model: options.model ?? 'echo-1', apiKey: 'sk-right' } },
      });
      expect(model.status).toBe(201);
      let toolIds: string[] = [];
      if (options.tools) {
        const tool = await t.request('POST', '/ai/tools', {
          token: user.token,
          body: {
            name: 'Weather',
            desc: 'Weather by city',
            actions: [
              {
                name: 'forecast',
                type: 'http',
                conf: {
                  method: 'GET',
                  url: `${weather.url}/weather?city={{city}}`,
                  response: { path: 'data' },
                  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
                },
              },
            ],
          },
        });
        expect(tool.status).toBe(201);
        toolIds = [tool.body.id];
      }
      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'Helper', conf: { modelId: model.body.id, prompt: 'Be brief.', toolIds } } });
      expect(bot.status).toBe(201);
      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'Chat', botId: bot.body.id, conf: { title: 'Chat' } } });
      expect(conv.status).toBe(201);
      return { user, modelId: model.body.id as string, botId: bot.body.id as string, convId: conv.body.id as string };
    }

    async function balance(userId: string): Promise<number> {
      const em = t.kernel.fork();
      const team = await t.kernel.get(TeamService).firstTeam(em, userId);
      const snapshot = await t.kernel.get(CreditService).balance(em, team!.team.id);
      return snapshot.balance.grantCredits + snapshot.balance.purchaseCredits;
    }

    describe('CRUD', () => {
      it('creates, reads, lists (hdId filter), updates (conf replaced whole) and deletes a conversation', async () => {
        const { user, botId } = await setup();
        const created = await t.request('POST', '/conversation', { token: user.token, body: { name: 'Device chat', botId, conf: { title: 'T', description: 'D', extra: 1 }, hdId: 'hd-42' } });
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({ name: 'Device chat', botId, ownerId: user.userId, members: [user.userId], hdId: 'hd-42', conf: { title: 'T', description: 'D', extra: 1 } });
        const id = created.body.id;

        const got = await t.request('GET', `/conversation/${id}`, { token: user.token });
        expect(got.status).toBe(200);
        expect(got.body).toEqual(created.body);

        const all = await t.request('GET', '/conversation?page=1&limit=10', { token: user.token });
        expect(all.status).toBe(200);
        expect(all.body).toMatchObject({ total: 2, page: 1, size: 10 });
        const filtered = await t.request('GET', '/conversation?hdId=hd-42', { token: user.token });
        expect(filtered.body.items.map((c: { id: string }) => c.id)).toEqual([id]);

        const updated = await t.request('PUT', `/conversation/${id}`, { token: user.token, body: { conf: { title: 'New' } } });
        expect(updated.status).toBe(200);
        expect(updated.body.conf).toEqual({ title: 'New' });
        expect(updated.body.name).toBe('Device chat');

        const bad = await t.request('PUT', `/conversation/${id}`, { token: user.token, body: { conf: 'nope' } });
        expect(bad.status).toBe(400);
        expect(bad.body.error).toBe('validation_failed');

        expect((await t.request('DELETE', `/conversation/${id}`, { token: user.token })).status).toBe(204);
        const gone = await t.request('GET', `/conversation/${id}`, { token: user.token });
        expect(gone.status).toBe(404);
        expect(gone.body.error).toBe('conversation_not_found');
      });

      it('lets members in and keeps everyone else out (404); only the owner deletes', async () => {
        const { user, botId } = await setup();
        const friend = await t.register();
        const stranger = await t.register();
        const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'Shared', botId, members: [friend.userId] } });
        expect(conv.body.members).toEqual([user.userId, friend.userId]);
        const id = conv.body.id;

        expect((await t.request('GET', `/conversation/${id}`, { token: friend.token })).status).toBe(200);
        expect((await t.request('GET', '/conversation', { token: friend.token })).body.items.map((c: { id: string }) => c.id)).toEqual([id]);
        for (const [method, path] of [
          ['GET', `/conversation/${id}`],
          ['GET', `/conversation/${id}/messages`],
          ['DELETE', `/conversation/${id}`],
        ] as const) {
          const r = await t.request(method, path, { token: stranger.token });
          expect(r.status).toBe(404);
          expect(r.body.error).toBe('conversation_not_found');
        }
        const send = await t.request('POST', `/conversation/${id}/messages`, { token: stranger.token, body: { content: 'hi' } });
        expect(send.status).toBe(404);
        const friendDelete = await t.request('DELETE', `/conversation/${id}`, { token: friend.token });
        expect(friendDelete.status).toBe(403);
        expect(friendDelete.body.error).toBe('conversation_owner_required');

        const unknown = await t.request('POST', '/conversation', { token: user.token, body: { name: 'X', members: ['01936b2e-0000-7000-8000-000000000000'] } });
        expect(unknown.status).toBe(400);
        expect(unknown.body.error).toBe('unknown_members');
        const otherBot = await t.request('POST', '/conversation', { token: stranger.token, body: { name: 'X', botId } });
        expect(otherBot.status).toBe(400);
        expect(otherBot.body.error).toBe('invalid_bot');
      });
    });

    describe('turns', () => {
      it('answers a sent message (not streamed), lists messages and settles credits from the usage', async () => {
        const { user, convId } = await setup();
        const before = await balance(user.userId);
        const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'hello there', attrs: { isDebug: true } } });
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('completed');
        const [question, reply] = r.body.messages;
        expect(question).toMatchObject({ role: 'user', content: 'hello there', authorId: user.userId, status: 'completed' });
        // 2,000 input tokens at 2 and 500 output at 4 credits per 1,000: 4 + 2 = 6 credits.
        expect(reply).toMatchObject({ role: 'assistant', content: 'Echo: hello there', status: 'completed', usage: { inputTokens: 2000, outputTokens: 500, credits: 6 } });
        expect(reply.debug).toMatchObject({ messages: 2, tools: [] });
        expect(await balance(user.userId)).toBe(before - 6);
        // The system prompt and the user's message reached the provider.
        expect(provider.requests.at(-1)!.messages).toEqual([
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello there' },
        ]);

        const list = await t.request('GET', `/conversation/${convId}/messages?page=1&limit=1`, { token: user.token });
        expect(list.status).toBe(200);
        expect(list.body).toMatchObject({ total: 2, page: 1, size: 1 });
        expect(list.body.items[0].id).toBe(question.id);

        const ledger = await t.request('GET', '/billing/credits/ledger', { token: user.token });
        expect(ledger.body.data.items[0].reason).toMatch(/Settled 6 of 12 reserved for conversation/);
      });

      it('streams a turn over the user WebSocket with sequence numbers, then reruns it', async () => {
        const { user, convId } = await setup();
        const socket = await UserSocket.open(t.wsUrl, user.token);
        try {
          const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'stream me', attrs: { stream: true } } });
          expect(r.status).toBe(202);
          expect(r.body.status).toBe('streaming');
          const assistant = r.body.messages[1];
          expect(assistant).toMatchObject({ role: 'assistant', status: 'streaming', content: '' });
          await socket.until((n) => n.type === 'end' && n.msgId === assistant.id);
          const notes = socket.notes.filter((n) => n.msgId === assistant.id);
          expect(notes[0]).toMatchObject({ convId, type: 'message-start', content: { role: 'assistant', step: 1 } });
          const deltas = notes.filter((n) => n.type === 'delta');
          expect(deltas.length).toBeGreaterThan(1);
          expect(deltas.map((n) => n.content).join('')).toBe('Echo: stream me');
          expect(notes.at(-1)).toMatchObject({ type: 'end', content: { status: 'completed', usage: { credits: 6 } } });
          const seqs = notes.map((n) => n.seq);
          expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
          expect(new Set(seqs).size).toBe(seqs.length);

          const stored = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
          expect(stored.body.items[1]).toMatchObject({ id: assistant.id, content: 'Echo: stream me', status: 'completed' });

          // Rerun the user message with new text: the old answer is replaced.
          const rerun = await t.request('POST', `/conversation/${convId}/messages/${r.body.messages[0].id}/run`, { token: user.token, body: { content: 'again' } });
          expect(rerun.status).toBe(200);
          expect(rerun.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
            ['user', 'again'],
            ['assistant', 'Echo: again'],
          ]);
          // Rerun the assistant message: it is deleted and answered anew.
          const answer = rerun.body.messages[1];
          const again = await t.request('POST', `/conversation/${convId}/messages/${answer.id}/run`, { token: user.token, body: {} });
          expect(again.status).toBe(200);
          expect(again.body.messages).toHaveLength(1);
          expect(again.body.messages[0].id).not.toBe(answer.id);
          const after = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
          expect(after.body.items.map((m: { content: string }) => m.content)).toEqual(['again', 'Echo: again']);

          const run = await t.request('POST', `/conversation/${convId}/messages/run`, { token: user.token, body: { content: 'via run' } });
          expect(run.status).toBe(200);
          expect(run.body.messages[1].content).toBe('Echo: via run');
        } finally {
          socket.close();
        }
      });

      it('runs an http tool with tool_auto and streams tool-call and tool-result', async () => {
        const { user, convId } = await setup({ tools: true });
        const socket = await UserSocket.open(t.wsUrl, user.token);
        try {
          const seen = weather.requests.length;
          const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'What is the weather?', attrs: { stream: true, tool_auto: true } } });
          expect(r.status).toBe(202);
          const end = await socket.until((n) => n.type === 'end' && n.content.status === 'completed');
          const types = socket.notes.map((n) => n.type);
          expect(types.filter((x) => x !== 'delta')).toEqual(['message-start', 'tool-call', 'tool-result', 'message-start', 'end']);
          const call = socket.notes.find((n) => n.type === 'tool-call')!;
          expect(call.content).toMatchObject({ toolName: 'Weather__forecast', input: { city: 'Paris' } });
          const result = socket.notes.find((n) => n.type === 'tool-result')!;
          expect(result.content).toMatchObject({ toolCallId: call.content.toolCallId, result: { city: 'Paris', sky: 'sunny' } });
          expect(weather.requests.slice(seen).map((q) => q.url)).toEqual(['/weather?city=Paris']);
          const text = socket.notes.filter((n) => n.type === 'delta' && n.msgId === end.msgId).map((n) => n.content).join('');
          expect(text).toBe('Forecast: {"city":"Paris","sky":"sunny"}');
          // The function definition the model saw.
          const offered = provider.requests.find((q) => q.tools?.length)!.tools!;
          expect(offered).toEqual([{ name: 'Weather__forecast', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }]);
          const stored = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
          expect(stored.body.items.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
        } finally {
          socket.close();
        }
      });

      it('waits for tool answers without tool_auto, then continues after the answer', async () => {
        const { user, convId } = await setup({ tools: true });
        const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'weather please' } });
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('waiting_tool');
        const assistant = r.body.messages[1];
        expect(assistant).toMatchObject({ status: 'waiting_tool', toolCalls: [{ name: 'Weather__forecast', input: { city: 'Paris' } }] });
        const callId = assistant.toolCalls[0].id;

        const blocked = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'hello?' } });
        expect(blocked.status).toBe(409);
        expect(blocked.body.error).toBe('tool_answers_pending');
        const wrong = await t.request('POST', `/conversation/${convId}/messages/${assistant.id}/tool`, { token: user.token, body: { tool_call_id: 'nope', content: 'x' } });
        expect(wrong.status).toBe(404);
        expect(wrong.body.error).toBe('tool_call_not_found');

        const answer = await t.request('POST', `/conversation/${convId}/messages/${assistant.id}/tool`, { token: user.token, body: { tool_call_id: callId, content: 'rain' } });
        expect(answer.status).toBe(200);
        expect(answer.body.status).toBe('completed');
        expect(answer.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
          ['tool', 'rain'],
          ['assistant', 'Forecast: rain'],
        ]);
        const twice = await t.request('POST', `/conversation/${convId}/messages/${assistant.id}/tool`, { token: user.token, body: { tool_call_id: callId, content: 'again' } });
        expect(twice.status).toBe(409);
        expect(twice.body.error).toBe('tool_call_answered');
      });

      it('refuses with 402 before calling the provider when credits cannot cover the reservation', async () => {
        const { user, convId } = await setup({ model: 'pricey' });
        const calls = provider.requests.length;
        const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'expensive' } });
        expect(r.status).toBe(402);
        expect(r.body).toMatchObject({ error: 'insufficient_credits' });
        expect(provider.requests.length).toBe(calls);
        const messages = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
        expect(messages.body.total).toBe(0);
      });

      it('answers ai_provider_not_configured when no adapter serves the model, and maps provider failures', async () => {
        const { user, convId } = await setup({ service: 'nowhere' });
        const r = await t.request('POST', `/conversation/${convId}/messages`, { token: user.token, body: { content: 'hi' } });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('ai_provider_not_configured');

        const { user: u2, modelId, convId: c2 } = await setup();
        await t.request('PUT', `/ai/models/${modelId}`, { token: u2.token, body: { name: 'Scripted', service: 'scripted', conf: { model: 'echo-1', apiKey: 'sk-wrong' } } });
        const before = await balance(u2.userId);
        const failed = await t.request('POST', `/conversation/${c2}/messages`, { token: u2.token, body: { content: 'hi' } });
        expect(failed.status).toBe(502);
        expect(failed.body.error).toBe('ai_auth_failed');
        expect(await balance(u2.userId)).toBe(before);
        const messages = await t.request('GET', `/conversation/${c2}/messages`, { token: u2.token });
        expect(messages.body.items[1]).toMatchObject({ role: 'assistant', status: 'error', error: { error: 'ai_auth_failed' } });
      });

      it('executes a tool action and sends its result into the conversation', async () => {
        const { user, convId } = await setup({ tools: true });
        const sent = await t.request('POST', `/conversation/${convId}/messages/run`, { token: user.token, body: { content: 'hi' } });
        const msgId = sent.body.messages[0].id;
        const tools = await t.request('GET', '/ai/tools', { token: user.token });
        const toolId = tools.body.items[0].id;
        const r = await t.request('POST', `/ai/tools/${toolId}/execute`, { token: user.token, body: { content: 'x', convId, msgId, hook: 'forecast', data: { city: 'Oslo' }, send: true } });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ toolId, hook: 'forecast', result: { city: 'Oslo', sky: 'sunny' }, message: { role: 'tool', toolName: 'Weather.forecast' } });
        const messages = await t.request('GET', `/conversation/${convId}/messages`, { token: user.token });
        expect(messages.body.items.at(-1).content).toBe('{"city":"Oslo","sky":"sunny"}');
        const noHook = await t.request('POST', `/ai/tools/${toolId}/execute`, { token: user.token, body: { content: 'x', convId, msgId, hook: 'nope' } });
        expect(noHook.status).toBe(404);
        expect(noHook.body.error).toBe('tool_action_not_found');
        const missing = await t.request('POST', `/ai/tools/${toolId}/execute`, { token: user.token, body: { convId, msgId, hook: 'forecast' } });
        expect(missing.status).toBe(400);
      });
    });
  });
});
