import type { TrellisError } from '@trellis/core';
import { collectParts, collectUntilError, describeProviderLive, describeProviderOnWire, DifyWireServer, fastRetry, textOf, weatherTool } from '@trellis/test-support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DifyProvider, difyQuery } from '../src/index.js';

describeProviderOnWire({
  name: 'DifyProvider (chatflow app, /chat-messages) on the Dify wire format',
  provider: (retry) => new DifyProvider({ retry }),
  startWire: (apiKey) => new DifyWireServer({ apiKey, app: 'chatflow' }).start(),
  conf: (wire, apiKey) => ({ baseURL: (wire as DifyWireServer).baseURL, apiKey, toolsInput: 'tools' }),
});

describeProviderOnWire({
  name: 'DifyProvider (workflow app, /workflows/run) on the Dify wire format',
  provider: (retry) => new DifyProvider({ retry }),
  startWire: (apiKey) => new DifyWireServer({ apiKey }).start(),
  conf: (wire, apiKey) => ({ baseURL: (wire as DifyWireServer).baseURL, apiKey, mode: 'workflow', toolsInput: 'tools' }),
});

describe('DifyProvider specifics', () => {
  let wire: DifyWireServer;
  let agent: DifyWireServer;
  const provider = new DifyProvider({ retry: fastRetry });
  beforeAll(async () => {
    wire = await new DifyWireServer({ apiKey: 'app-wire', app: 'chatflow' }).start();
    agent = await new DifyWireServer({ apiKey: 'app-wire', app: 'agent' }).start();
  });
  afterAll(async () => {
    await wire.close();
    await agent.close();
  });
  beforeEach(() => {
    wire.reset();
    agent.reset();
  });
  const conf = (server: DifyWireServer, extra: Record<string, unknown> = {}) => provider.parseConf({ baseURL: server.baseURL, apiKey: 'app-wire', ...extra });

  it('sends query, inputs, user and streaming mode; system and tools go to the configured inputs', async () => {
    wire.enqueue({ text: ['ok'] });
    await collectParts(
      provider.chat(conf(wire, { inputs: { lang: 'fr' }, systemInput: 'instructions', toolsInput: 'tools', user: 'team-7' }), {
        messages: [
          { role: 'system', content: 'Be kind.' },
          { role: 'user', content: 'Bonjour' },
        ],
        tools: [weatherTool],
      }),
    );
    const sent = wire.chatRequests[0];
    expect(sent.path).toBe('/v1/chat-messages');
    expect(sent.headers.authorization).toBe('Bearer app-wire');
    expect(sent.body).toMatchObject({ query: 'Bonjour', response_mode: 'streaming', user: 'team-7', conversation_id: '', inputs: { lang: 'fr', instructions: 'Be kind.' } });
    expect(JSON.parse(sent.body.inputs.tools)[0]).toEqual({ type: 'function', function: { name: 'get_weather', description: weatherTool.description, parameters: weatherTool.parameters } });
  });

  it('keeps the Dify conversation of a thread, and starts a new one when Dify lost it', async () => {
    const threaded = new DifyProvider({ retry: fastRetry });
    wire.enqueue({ text: ['first'] }, { text: ['second'] });
    await collectParts(threaded.chat(conf(wire), { messages: [{ role: 'user', content: 'one' }], threadId: 'conv-1' }));
    const conversationId = threaded.conversationOf('conv-1');
    expect(conversationId).toBeTruthy();
    expect(wire.conversations.has(conversationId!)).toBe(true);
    await collectParts(threaded.chat(conf(wire), { messages: [{ role: 'user', content: 'two' }], threadId: 'conv-1' }));
    expect(wire.chatRequests[1].body.conversation_id).toBe(conversationId);
    // Dify forgets it: the next call gets 404, forgets the mapping and retries with a new conversation.
    wire.conversations.delete(conversationId!);
    wire.enqueue({ text: ['third'] });
    const parts = await collectParts(threaded.chat(conf(wire), { messages: [{ role: 'user', content: 'three' }], threadId: 'conv-1' }));
    expect(textOf(parts)).toBe('third');
    expect(wire.chatRequests.map((request) => request.body.conversation_id)).toEqual(['', conversationId, conversationId, '']);
    expect(threaded.conversationOf('conv-1')).not.toBe(conversationId);
  });

  it('agent apps: agent_message deltas and usage; agent thoughts (tools Dify ran) are not tool calls for Trellis', async () => {
    agent.enqueue({ toolCalls: [{ name: 'web_search', arguments: '{"q":"weather"}' }], text: ['It is ', 'sunny.'], usage: { inputTokens: 40, outputTokens: 6 } });
    const parts = await collectParts(provider.chat(conf(agent), { messages: [{ role: 'user', content: 'Weather?' }] }));
    expect(parts).toEqual([
      { type: 'text-delta', delta: 'It is ' },
      { type: 'text-delta', delta: 'sunny.' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 40, outputTokens: 6 } },
    ]);
  });

  it('sends tool results of the last turn as the query', () => {
    expect(
      difyQuery([
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'c1', toolName: 'get_weather', input: {} }] },
        { role: 'tool', toolCallId: 'c1', toolName: 'get_weather', content: '{"c":3}' },
      ]),
    ).toBe('Tool results:\n- get_weather (c1): {"c":3}');
    expect(() => difyQuery([{ role: 'system', content: 'x' }])).toThrow(/user message/);
  });

  it('workflow mode: query in the input variable, text_chunk deltas, usage of the LLM nodes', async () => {
    wire.enqueue({ text: ['Fine ', 'day.'], usage: { inputTokens: 12, outputTokens: 3 } });
    const parts = await collectParts(provider.chat(conf(wire, { mode: 'workflow', queryInput: 'question' }), { messages: [{ role: 'user', content: 'How is it?' }] }));
    expect(parts).toEqual([
      { type: 'text-delta', delta: 'Fine ' },
      { type: 'text-delta', delta: 'day.' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 3 } },
    ]);
    const sent = wire.chatRequests[0];
    expect(sent.path).toBe('/v1/workflows/run');
    expect(sent.body).toMatchObject({ inputs: { question: 'How is it?' }, response_mode: 'streaming', user: 'trellis' });
  });

  it('a failed workflow is ai_unavailable and is not retried', async () => {
    wire.enqueue({ text: [], finishReason: 'failed' });
    const { error } = await collectUntilError(provider.chat(conf(wire, { mode: 'workflow' }), { messages: [{ role: 'user', content: 'x' }] }));
    expect((error as TrellisError).code).toBe('ai_unavailable');
    expect((error as Error).message).toMatch(/workflow failed/);
    expect(wire.chatRequests).toHaveLength(1);
  });

  it('an error event after deltas fails the stream with the mapped error', async () => {
    wire.enqueue({ text: ['Par', 'tial'], streamError: { status: 400, code: 'provider_quota_exceeded', message: 'Your quota of the model provider has been used up.' } });
    const { parts, error } = await collectUntilError(provider.chat(conf(wire), { messages: [{ role: 'user', content: 'x' }] }));
    expect(textOf(parts)).toBe('Partial');
    expect((error as TrellisError).code).toBe('ai_bad_request');
    expect((error as Error).message).toContain('provider_quota_exceeded');
  });

  it('an abort asks Dify to stop the task', async () => {
    wire.enqueue({ text: ['a', 'b', 'c'], holdAfter: 1 });
    const controller = new AbortController();
    const reading = collectUntilError(provider.chat(conf(wire), { messages: [{ role: 'user', content: 'x' }], signal: controller.signal }));
    await wire.held();
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    const { error } = await reading;
    expect((error as Error).name).toBe('AbortError');
    for (let i = 0; i < 50 && wire.stopRequests.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(wire.stopRequests).toHaveLength(1);
    expect(wire.stopRequests[0].body).toEqual({ user: 'trellis' });
  });

  it('parses conf: apiKey required, mode and defaults', () => {
    expect(provider.parseConf({ apiKey: 'app-1' })).toMatchObject({ baseURL: 'https://api.dify.ai/v1', mode: 'chat', user: 'trellis', inputs: {}, queryInput: 'query', toolCallsOutput: 'tool_calls' });
    try {
      provider.parseConf({ mode: 'completion', inputs: [] });
      expect.unreachable();
    } catch (error) {
      expect((error as TrellisError).details?.map((issue) => issue.field)).toEqual(['conf.apiKey', 'conf.mode', 'conf.inputs']);
    }
  });
});

const liveKey = process.env.TRELLIS_TEST_DIFY_API_KEY;
describeProviderLive({
  name: 'DifyProvider',
  provider: () => new DifyProvider(),
  tools: false,
  conf: liveKey
    ? { apiKey: liveKey, ...(process.env.TRELLIS_TEST_DIFY_BASE_URL ? { baseURL: process.env.TRELLIS_TEST_DIFY_BASE_URL } : {}), ...(process.env.TRELLIS_TEST_DIFY_MODE ? { mode: process.env.TRELLIS_TEST_DIFY_MODE } : {}) }
    : undefined,
});
