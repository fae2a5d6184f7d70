import { AnthropicWireServer, collectParts, describeProviderLive, describeProviderOnWire, fastRetry, type WireRequest } from '@trellis/test-support';
import type { TrellisError } from '@trellis/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../src/index.js';

describeProviderOnWire({
  name: 'AnthropicProvider on the Anthropic Messages wire format',
  provider: (retry) => new AnthropicProvider({ retry }),
  startWire: (apiKey) => new AnthropicWireServer({ apiKey }).start(),
  conf: (wire, apiKey) => ({ model: 'claude-3-5-haiku-latest', baseURL: (wire as AnthropicWireServer).baseURL, apiKey }),
});

describe('AnthropicProvider requests and conf', () => {
  let wire: AnthropicWireServer;
  const provider = new AnthropicProvider({ retry: fastRetry });
  beforeAll(async () => {
    wire = await new AnthropicWireServer({ apiKey: 'sk-ant-wire' }).start();
  });
  afterAll(async () => {
    await wire.close();
  });
  beforeEach(() => {
    wire.reset();
  });
  const conf = (extra: Record<string, unknown> = {}) => provider.parseConf({ model: 'claude-3-5-haiku-latest', baseURL: wire.baseURL, apiKey: 'sk-ant-wire', ...extra });

  it('sends the Messages API request: system apart, max_tokens, tools with input_schema, tool_result blocks', async () => {
    wire.enqueue({ text: ['ok'] });
    await collectParts(
      provider.chat(conf({ maxTokens: 321, temperature: 0.2, topK: 5 }), {
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: 'Let me check.', toolCalls: [{ toolCallId: 'toolu_1', toolName: 'get_weather', input: { city: 'Oslo' } }] },
          { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: '{"c":-3}' },
        ],
        tools: [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
      }),
    );
    const sent = wire.chatRequests[0] as WireRequest;
    expect(sent.headers['x-api-key']).toBe('sk-ant-wire');
    expect(sent.headers['anthropic-version']).toBeTruthy();
    expect(sent.body).toMatchObject({ model: 'claude-3-5-haiku-latest', stream: true, max_tokens: 321, temperature: 0.2, top_k: 5 });
    expect(JSON.stringify(sent.body.system)).toContain('You are terse.');
    expect(sent.body.tools[0]).toMatchObject({ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } });
    expect(sent.body.messages[1]).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] });
    expect(sent.body.messages[2]).toMatchObject({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] });
  });

  it('maps 529 overloaded to ai_unavailable after retrying', async () => {
    wire.enqueue({ error: { status: 529, message: 'Overloaded' } }, { error: { status: 529, message: 'Overloaded' } });
    const error = await collectParts(provider.chat(conf(), { messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e);
    expect((error as TrellisError).code).toBe('ai_unavailable');
    expect(wire.chatRequests).toHaveLength(2);
  });

  it('reads the wait from anthropic-ratelimit-*-reset when retry-after is absent', async () => {
    const reset = new Date(Date.now() + 120_000).toISOString();
    wire.enqueue({ error: { status: 429, message: 'Rate limited', headers: { 'anthropic-ratelimit-requests-reset': reset } } });
    const error = (await collectParts(provider.chat(conf(), { messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e)) as TrellisError;
    expect(error.code).toBe('ai_rate_limited');
    expect(error.extra?.retry_after).toBeGreaterThan(100);
    expect(error.extra?.retry_after).toBeLessThanOrEqual(120);
    // 120 s is beyond the 5 s the test policy waits: no retry.
    expect(wire.chatRequests).toHaveLength(1);
  });

  it('maps stop reasons (max_tokens to length)', async () => {
    wire.enqueue({ text: ['cut'], finishReason: 'max_tokens', usage: { inputTokens: 4, outputTokens: 1 } });
    const parts = await collectParts(provider.chat(conf(), { messages: [{ role: 'user', content: 'hi' }] }));
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'length', usage: { inputTokens: 4, outputTokens: 1 } });
  });

  it('requires model and apiKey, bounds temperature to 0..1, offers no embeddings', () => {
    try {
      provider.parseConf({ temperature: 1.5 });
      expect.unreachable();
    } catch (error) {
      expect((error as TrellisError).details?.map((issue) => issue.field)).toEqual(['conf.model', 'conf.apiKey', 'conf.temperature']);
    }
    expect(conf().baseURL).toBe(wire.baseURL);
    expect(provider.parseConf({ model: 'm', apiKey: 'k' }).baseURL).toBe('https://api.anthropic.com/v1');
    expect('embed' in provider).toBe(false);
  });
});

const liveKey = process.env.TRELLIS_TEST_ANTHROPIC_API_KEY;
describeProviderLive({
  name: 'AnthropicProvider',
  provider: () => new AnthropicProvider(),
  conf: liveKey
    ? { model: process.env.TRELLIS_TEST_ANTHROPIC_MODEL ?? 'claude-3-5-haiku-latest', apiKey: liveKey, ...(process.env.TRELLIS_TEST_ANTHROPIC_BASE_URL ? { baseURL: process.env.TRELLIS_TEST_ANTHROPIC_BASE_URL } : {}) }
    : undefined,
});
