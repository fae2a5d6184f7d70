import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, CreditService, provide, TeamService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';
import { ScriptedProvider } from './support/ai-clients.js';
import { contractFetch } from './support/contract-fetch.js';

/**
 * The OpenAI-compatible API over real sockets, driven by the official `openai` SDK and the AI
 * SDK's OpenAI-compatible provider: a bot answers (streamed, with usage, with tools passed
 * through), a deployed block runs, errors come in OpenAI's shape; every response is checked
 * against /openapi.json on its way to the client.
 */
describe.each(testDatabases())('OpenAI-compatible API on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let botId: string;
    let blockId: string;
    let deploymentToken: string;
    let modelId: string;
    const provider = new ScriptedProvider();
    const checked = { count: 0 };

    const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${t.url}/v1`, maxRetries: 0, fetch: contractFetch(t.contract, checked) });

    async function balance(userId: string): Promise<number> {
      const em = t.kernel.fork();
      const team = await t.kernel.get(TeamService).firstTeam(em, userId);
      const snapshot = await t.kernel.get(CreditService).balance(em, team!.team.id);
      return snapshot.balance.grantCredits + snapshot.balance.purchaseCredits;
    }

    beforeAll(async () => {
      t = await startTestHost(db, transport, {
        adapters: [provide(aiProvidersServiceIdentifier, [provider])],
        config: { ai: { pricing: { default: { input: 2, output: 4 }, models: { 'scripted/pricey': { input: 1_000_000, output: 1_000_000 } }, reserveInputTokens: 4000, reserveOutputTokens: 1000 } } },
      });
      owner = await actor(t);
      const model = await t.request('POST', '/ai/models', { token: owner.token, body: { name: 'Scripted', service: 'scripted', conf: { model: 'echo-1', apiKey: 'sk-right' } } });
      expect(model.status).toBe(201);
      modelId = model.body.id;
      const bot = await t.request('POST', '/bot', { token: owner.token, body: { name: 'Helper', conf: { modelId: model.body.id, prompt: 'Be brief.' } } });
      expect(bot.status).toBe(201);
      botId = bot.body.id;
      const project = await createProject(t, owner.token, { access: 'private' });
      const block = await t.request('POST', `/block/${project.id}`, {
        token: owner.token,
        body: { name: 'Greeter', type: 'workflow', content: wf.doc(wf.input('name', { required: true }), wf.code('greet', "emit('Hello, '); emit(inputs.name); return inputs.name.length;"), wf.output('out', '{{ greet }}')) },
      });
      expect(block.status, block.text).toBe(201);
      blockId = block.body.id;
      const deployed = await t.request('POST', `/block/${blockId}/deploy`, { token: owner.token, body: { access: 'token' } });
      expect(deployed.status, deployed.text).toBe(201);
      deploymentToken = deployed.body.deploymentToken;
      expect(deploymentToken).toMatch(/^trd_/);
    });
    afterAll(() => t?.close());

    it('lists bots and deployed blocks as models for an API key, the deployment for its token; no key is a 401', async () => {
      const models = await client(owner.apiKey).models.list();
      const ids = models.data.map((m) => m.id);
      expect(ids).toEqual([`bot:${botId}`, `block:${blockId}`]);
      expect(models.data[0]).toMatchObject({ object: 'model', owned_by: owner.userId });
      const byToken = await client(deploymentToken).models.list();
      expect(byToken.data.map((m) => m.id)).toEqual([`block:${blockId}`]);
      const stranger = await actor(t);
      expect((await client(stranger.apiKey).models.list()).data).toEqual([]);
      const anonymous = await fetch(`${t.url}/v1/models`);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ error: { type: 'authentication_error', code: 'missing_credentials' } });
    });

    it('a bot answers through the openai SDK, not streamed; credits are settled from the usage', async () => {
      const before = await balance(owner.userId);
      const answer = await client(owner.apiKey).chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'hello there' }] });
      expect(answer.object).toBe('chat.completion');
      expect(answer.model).toBe(`bot:${botId}`);
      expect(answer.choices[0]).toMatchObject({ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Echo: hello there' } });
      expect(answer.usage).toEqual({ prompt_tokens: 2000, completion_tokens: 500, total_tokens: 2500 });
      // 2,000 input tokens at 2 and 500 output at 4 credits per 1,000: 6 credits.
      expect(await balance(owner.userId)).toBe(before - 6);
      expect(provider.requests.at(-1)!.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello there' },
      ]);
    });

    it('a bot streams through the openai SDK, with the usage in the last chunk when asked', async () => {
      const stream = await client(owner.token).chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'stream me please' }], stream: true, stream_options: { include_usage: true } });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? ''));
      expect(deltas.filter(Boolean).length).toBeGreaterThan(2);
      expect(deltas.join('')).toBe('Echo: stream me please');
      expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean)).toEqual(['stop']);
      expect(chunks.at(-1)).toMatchObject({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 2000, completion_tokens: 500, total_tokens: 2500 } });
      expect(chunks.slice(0, -1).every((c) => !c.usage)).toBe(true);
    });

    it('passes tool definitions to the model and its tool calls back; the tool result continues the chat, streamed too', async () => {
      const openai = client(owner.apiKey);
      const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
      const asked = await openai.chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'What is the weather?' }], tools });
      const choice = asked.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      const call = choice.message.tool_calls![0]!;
      expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
      expect(JSON.parse((call as { function: { arguments: string } }).function.arguments)).toEqual({ city: 'Paris' });
      expect(provider.requests.at(-1)!.tools).toEqual([{ name: 'get_weather', description: 'Weather by city', parameters: tools[0]!.function.parameters }]);

      const answered = await openai.chat.completions.create({
        model: `bot:${botId}`,
        messages: [{ role: 'user', content: 'What is the weather?' }, choice.message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
        tools,
      });
      expect(answered.choices[0]!.message.content).toBe('Forecast: sunny');
      expect(provider.requests.at(-1)!.messages.slice(-2)).toEqual([
        { role: 'assistant', content: '', toolCalls: [{ toolCallId: call.id, toolName: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'tool', toolCallId: call.id, toolName: 'get_weather', content: 'sunny' },
      ]);

      const streamed = await openai.chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'weather, please' }], tools, stream: true });
      const calls = [];
      let finish: string | null = null;
      for await (const chunk of streamed) {
        for (const c of chunk.choices) {
          calls.push(...(c.delta.tool_calls ?? []));
          finish ??= c.finish_reason;
        }
      }
      expect(finish).toBe('tool_calls');
      expect(calls).toEqual([expect.objectContaining({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } })]);
    });

    it('runs a deployed block with its deployment token as the key, streamed and not; JSON text is the inputs', async () => {
      const openai = client(deploymentToken);
      const answer = await openai.chat.completions.create({ model: `block:${blockId}`, messages: [{ role: 'user', content: 'Ada' }] });
      expect(answer.choices[0]!.message.content).toBe('Hello, Ada');
      const stream = await openai.chat.completions.create({ model: `block:${blockId}`, messages: [{ role: 'user', content: '{"name":"Grace"}' }], stream: true });
      const deltas: string[] = [];
      for await (const chunk of stream) deltas.push(...chunk.choices.map((c) => c.delta.content ?? '').filter(Boolean));
      expect(deltas).toEqual(['Hello, ', 'Grace']);
      // An ordinary run of the deployment: listed for the project with its version and source.
      const runs = await t.request('GET', `/documents/${blockId}/runs`, { token: owner.token });
      expect(runs.body.items.slice(0, 2).map((r: { source: string; version: string; status: string }) => [r.source, r.version, r.status])).toEqual([
        ['openai', '1', 'completed'],
        ['openai', '1', 'completed'],
      ]);
      // The owner's API key may call it too; a stranger may not see it.
      expect((await client(owner.apiKey).chat.completions.create({ model: `block:${blockId}`, messages: [{ role: 'user', content: 'Lin' }] })).choices[0]!.message.content).toBe('Hello, Lin');
      const stranger = await actor(t);
      await expect(client(stranger.apiKey).chat.completions.create({ model: `block:${blockId}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404, code: 'block_not_found' });
    });

    it('a deployed block whose LLM block reports usage answers that usage, streamed and not', async () => {
      const project = await createProject(t, owner.token, { access: 'private' });
      const block = await t.request('POST', `/block/${project.id}`, {
        token: owner.token,
        body: { name: 'Asker', type: 'workflow', content: wf.doc(wf.input('question', { required: true }), wf.llm('answer', modelId, '{{ question }}'), wf.output('out', '{{ answer }}')) },
      });
      expect(block.status, block.text).toBe(201);
      expect((await t.request('POST', `/block/${block.body.id}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
      const openai = client(owner.apiKey);
      // The scripted model reports 2,000 input and 500 output tokens per call.
      const answer = await openai.chat.completions.create({ model: `block:${block.body.id}`, messages: [{ role: 'user', content: 'what is usage?' }] });
      expect(answer.choices[0]!.message.content).toBeTruthy();
      expect(answer.usage).toEqual({ prompt_tokens: 2000, completion_tokens: 500, total_tokens: 2500 });
      const stream = await openai.chat.completions.create({ model: `block:${block.body.id}`, messages: [{ role: 'user', content: 'stream it' }], stream: true, stream_options: { include_usage: true } });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 2000, completion_tokens: 500, total_tokens: 2500 } });
    });

    it('answers errors in OpenAI\'s shape, which the SDK raises as its error classes', async () => {
      const openai = client(owner.apiKey);
      await expect(openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404, code: 'model_not_found', type: 'not_found_error' });
      await expect(openai.chat.completions.create({ model: `bot:${botId}`, messages: [] })).rejects.toMatchObject({ status: 400, code: 'validation_failed', param: 'messages' });
      await expect(openai.chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'robot', content: 'x' } as never] })).rejects.toMatchObject({ status: 400, code: 'invalid_messages', param: 'messages[0].role' });
      await expect(client('trk_not-a-key').chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
      await expect(client(deploymentToken).chat.completions.create({ model: `bot:${botId}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
      await expect(client(deploymentToken).chat.completions.create({ model: `block:${blockId}`, messages: [{ role: 'user', content: '{"name": 3}' }] })).rejects.toMatchObject({ status: 400, code: 'invalid_inputs' });
      const raw = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json' }, body: '{"model":' });
      expect(raw.status).toBe(400);
      expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.any(String) } });
    });

    it('a provider failure is an error before the answer, or an error event in a stream; the credit hold is released; too few credits is a 402', async () => {
      const botOf = async (conf: Record<string, unknown>) => {
        const model = await t.request('POST', '/ai/models', { token: owner.token, body: { name: 'Other', service: 'scripted', conf } });
        return (await t.request('POST', '/bot', { token: owner.token, body: { name: 'Other', conf: { modelId: model.body.id } } })).body.id as string;
      };
      const broken = await botOf({ model: 'echo-1', apiKey: 'sk-wrong' });
      const openai = client(owner.apiKey);
      const before = await balance(owner.userId);
      await expect(openai.chat.completions.create({ model: `bot:${broken}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 502, code: 'ai_auth_failed', type: 'server_error' });
      const stream = await openai.chat.completions.create({ model: `bot:${broken}`, messages: [{ role: 'user', content: 'x' }], stream: true });
      await expect(async () => {
        for await (const chunk of stream) void chunk;
      }).rejects.toThrow(/refused the credentials/);
      // Both holds were released: nothing was charged.
      expect(await balance(owner.userId)).toBe(before);
      const pricey = await botOf({ model: 'pricey', apiKey: 'sk-right' });
      await expect(openai.chat.completions.create({ model: `bot:${pricey}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 402, code: 'insufficient_credits', type: 'insufficient_quota' });
    });

    it('the AI SDK\'s OpenAI-compatible provider generates and streams with a bot and a deployed block', async () => {
      const trellis = createOpenAICompatible({ name: 'trellis', baseURL: `${t.url}/v1`, apiKey: owner.apiKey, includeUsage: true, fetch: contractFetch(t.contract, checked) });
      const generated = await generateText({ model: trellis(`bot:${botId}`), prompt: 'from the AI SDK', maxRetries: 0 });
      expect(generated.text).toBe('Echo: from the AI SDK');
      expect(generated.usage).toMatchObject({ inputTokens: 2000, outputTokens: 500 });
      const streamed = streamText({ model: trellis(`block:${blockId}`), prompt: 'Alan', maxRetries: 0 });
      let text = '';
      for await (const delta of streamed.textStream) text += delta;
      expect(text).toBe('Hello, Alan');
      expect(await streamed.finishReason).toBe('stop');
      expect(checked.count).toBeGreaterThan(10);
    });
  });
});
